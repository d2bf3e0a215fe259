"""runprover's flag parsing and console output: values checked up front, a banner, progress lines."""
from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import TextIO

from gpu_engine import backends
from gpu_engine.budget import parse_size
from gpu_engine.engine.state import JobEvent
from gpu_engine.engine.stats import EngineStats


def bind_address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise argparse.ArgumentTypeError(f"--bind expects HOST:PORT, got {value!r}")
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--bind port must be a number, got {port!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"--bind port must be 0-65535, got {number}")
    return host.strip("[]"), number


def positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {number}")
    return number


def memory_size(value: str) -> int:
    try:
        size = parse_size(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if size <= 0:
        raise argparse.ArgumentTypeError("--memory-budget must be positive")
    return size


def gpu_list(value: str) -> str | list[int]:
    if value in ("auto", "none"):
        return value
    try:
        ordinals = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--gpus expects auto, none or a list such as 0,1; got {value!r}") from None
    if not ordinals or any(o < 0 for o in ordinals) or len(set(ordinals)) != len(ordinals):
        raise argparse.ArgumentTypeError(f"--gpus expects distinct non-negative ordinals; got {value!r}")
    return ordinals


def resolve_devices(requested_backend: str, gpus: str | list[int]) -> tuple[str, list[int]]:
    """The backend actually used and the device ordinals its workers bind to (ValueError if impossible).

    `gpus` is what `gpu_list` gives: "none", "auto" or a list of ordinals."""
    if gpus == "none":
        if requested_backend == "cuda":
            raise ValueError("--gpus none cannot be combined with --backend cuda")
        return "cpu", [0]
    backend = backends.select_backend(requested_backend)
    if backend == "cpu":
        # The CPU backend stands in for devices: an explicit list just names them.
        return backend, ([0] if isinstance(gpus, str) else list(gpus))  # a str here is "auto"
    count = backends.device_count()
    if isinstance(gpus, str):  # "auto"
        return backend, list(range(count))
    missing = [o for o in gpus if o >= count]
    if missing:
        raise ValueError(f"GPU ordinal(s) {missing} not present; this machine has {count} GPU(s)")
    return backend, list(gpus)


class ParamsProgress:
    """A one-line progress bar per proof kind while parameters are generated (only when they are)."""

    def __init__(self, out: TextIO = sys.stdout, width: int = 30) -> None:
        self.out, self.width = out, width
        self._last: tuple[str, int] | None = None
        self._tty = out.isatty()
        self._printed_at = 0.0

    def __call__(self, kind: str, step: str, done: int, total: int) -> None:
        now = time.monotonic()
        pct = int(100 * done / total) if total else 100
        finished = step == "done"
        throttled = not self._tty and now - self._printed_at < 2
        if not finished and (self._last == (kind, pct) or throttled):
            return
        self._last, self._printed_at = (kind, pct), now
        filled = self.width * pct // 100
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"  params {kind:<13} [{bar}] {pct:3d}% {'' if finished else step}"
        end = "\n" if finished or not self._tty else ""
        self.out.write(("\r" if self._tty else "") + line.ljust(78) + end)
        self.out.flush()


class ProgressPrinter:
    """One line per finished job: outcome, running totals and the proof rate."""

    def __init__(self, stats: EngineStats, out: TextIO = sys.stdout) -> None:
        self.stats, self.out = stats, out
        self._lock = threading.Lock()

    # A job's outcome in the API's words; a failure stands out in capitals.
    OUTCOME_WORDS = {"done": "done  ", "failed": "FAILED", "cancelled": "cancelled"}

    def __call__(self, event: JobEvent) -> None:
        with self.stats.lock:
            done = sum(self.stats.done_by_kind.values())
            failed = sum(self.stats.failed_by_kind.values())
            cancelled = sum(self.stats.cancelled_by_kind.values())
        minutes = max(time.monotonic() - self.stats.started, 1e-9) / 60
        outcome = self.OUTCOME_WORDS[event.outcome]
        tally = f"done {done} failed {failed}" + (f" cancelled {cancelled}" if cancelled else "")
        line = (f"[{time.strftime('%H:%M:%S')}] {outcome} {event.proof_kind:<13} {event.job_id}  "
                f"{event.wall_secs:6.2f}s | {tally} | {done / minutes:.1f} proofs/min")
        if not event.success and event.error:
            line += f"\n           {event.error}"
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()
