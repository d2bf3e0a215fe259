"""The proving process pool: the CPU-heavy halves of a proof, run outside the web process.

In the embedded mode the engine shares its process (and its GIL) with Daphne. arkworks' MSMs and
the gmpy2 NTTs hold the GIL for their whole run (100-300 ms each), which stalls every WebSocket
frame and HTTP request behind them. Here they run in child processes instead; the engine's threads
submit and wait on a future, and a future wait releases the GIL.

The children import only `gpu_engine.groth16` and the CPU backend (no Django): they get plain
picklable data (the witness, the device output) plus a `ParamsRef`, and load the parameters from
the on-disk cache the parent already generated, once per child (`load_params` keeps them in
memory). A child that dies breaks the whole executor; the pool then starts a fresh one and the
caller gets `BrokenProcessPool`, which the engine treats as a failed attempt of that partition.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import select
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

log = logging.getLogger(__name__)

__all__ = ["BrokenProcessPool", "CHILD_NICENESS", "ParamsRef", "ProvingPool", "child_init", "default_size"]

# Pool children run at a lower CPU priority than the engine process, which serves the web: when
# the cores are all busy, a request or a frame to send wins over a few more ms of an MSM.
CHILD_NICENESS = 10


@dataclass(frozen=True)
class ParamsRef:
    """Which parameters a child loads: by kind and scale from a cache directory (never shipped whole)."""

    kind: str
    scale: int
    params_dir: str

    @classmethod
    def of(cls, kind: str, scale: int, params_dir: Path | str) -> ParamsRef:
        return cls(kind, int(scale), str(Path(params_dir).resolve()))


def default_size(backend: str, workers: int, finalizers: int) -> int:
    """One process per thread that submits work, at most one per core.

    With the CPU backend both the workers (device part) and the finalizers submit; with CUDA only
    the finalizers do, since the device part stays in the thread that owns the CUDA context."""
    wanted = finalizers + (workers if backend == "cpu" else 0)
    return max(1, min(wanted, os.cpu_count() or 1))


# ---- child side (module-level functions, so they pickle by name) -----------------------------

_child_backend: Any = None


def _params(ref: ParamsRef):
    from gpu_engine.groth16 import api

    return api.load_params(ref.kind, ref.params_dir, ref.scale)


def _backend():
    global _child_backend
    if _child_backend is None:
        from gpu_engine.backends.cpu import CpuBackend

        _child_backend = CpuBackend()
    return _child_backend


def child_init(engine_pid: int, refs: tuple[ParamsRef, ...] = ()) -> None:
    """Initializer of every pool child (the synthesis pool's too).

    * SIGINT is ignored: Ctrl-C in a terminal signals the whole process group, and the engine
      drains its held jobs through these children, then shuts them down itself. (SIGTERM keeps
      its default: the executor terminates the rest of a broken pool with it. Under systemd use
      KillMode=mixed so a stop signals only the engine.)
    * The child exits when the engine process does: an engine killed outright leaves no
      orphans holding memory (the stdlib's children would wait on their queue forever).
    * It runs at CHILD_NICENESS.
    * `refs`: parameters loaded before the first task (a failure here is only logged; the task
      that needs them loads again and reports the real error)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        os.nice(CHILD_NICENESS)
    except OSError:
        pass
    threading.Thread(target=_exit_with, args=(engine_pid,), name="engine-watch", daemon=True).start()
    for ref in refs:
        try:
            _params(ref)
        except Exception:  # noqa: BLE001
            log.exception("proving process %d: could not preload %s parameters", os.getpid(), ref.kind)


def _run_device(ref: ParamsRef, witness) -> tuple[Any, int]:
    from gpu_engine.groth16 import api

    return api.prove_device(_params(ref), witness, _backend()), os.getpid()


def _run_finalize(ref: ParamsRef, witness, device_out) -> tuple[Any, int]:
    from gpu_engine.groth16 import api

    return api.prove_finalize(_params(ref), witness, device_out, _backend()), os.getpid()


def _exit_with(engine_pid: int) -> None:
    try:
        fd = os.pidfd_open(engine_pid)
    except (AttributeError, OSError):  # no pidfd (old kernel): poll
        while True:
            time.sleep(1.0)
            try:
                os.kill(engine_pid, 0)
            except ProcessLookupError:
                os._exit(0)
            except PermissionError:
                pass
    select.select([fd], [], [])  # readable once the engine has exited
    os._exit(0)


# ---- parent side -------------------------------------------------------------------------------

class ProvingPool:
    """A process pool for `prove_device` / `prove_finalize` that rebuilds itself when a child dies.

    Thread-safe: the engine's worker and finalizer threads call `prove_device` and `finalize`
    concurrently. Each call blocks its thread (GIL released) until the child is done, and returns
    the result with the pid of the child that computed it."""

    def __init__(self, processes: int, preload: Iterable[ParamsRef] = ()) -> None:
        if processes < 1:
            raise ValueError("a proving pool needs at least one process")
        self.processes = processes
        self._preload = tuple(preload)
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._closed = False
        self._inflight = 0
        self.rebuilds = 0

    def start(self) -> None:
        with self._lock:
            if self._executor is None and not self._closed:
                self._executor = self._new_executor()

    def _new_executor(self) -> ProcessPoolExecutor:
        # Not fork: the parent holds Django, threads and locks that a forked child would inherit mid-use.
        ctx = multiprocessing.get_context("forkserver")
        return ProcessPoolExecutor(self.processes, mp_context=ctx, initializer=child_init,
                                   initargs=(os.getpid(), self._preload))

    def prove_device(self, ref: ParamsRef, witness) -> tuple[Any, int]:
        """(DeviceOutput, pid): H and the G1 MSMs on the CPU backend, in a child."""
        return self._call(_run_device, ref, witness)

    def finalize(self, ref: ParamsRef, witness, device_out) -> tuple[Any, int]:
        """(PartitionProof, pid): the G2 MSM and the assembly, in a child."""
        return self._call(_run_finalize, ref, witness, device_out)

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        with self._lock:
            if self._closed or self._executor is None:
                raise RuntimeError("the proving pool is not running")
            executor = self._executor
            self._inflight += 1
        try:
            try:
                future = executor.submit(fn, *args)
            except BrokenProcessPool:
                self._replace(executor)
                raise
            try:
                return future.result()
            except BrokenProcessPool:
                self._replace(executor)
                raise
            except Exception:
                raise
            except BaseException as exc:  # e.g. a KeyboardInterrupt sent back: must not end the caller's thread
                raise RuntimeError(f"proving process interrupted: {type(exc).__name__}: {exc}") from exc
        finally:
            with self._lock:
                self._inflight -= 1

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        """Start a fresh executor once per broken one (several callers see the same breakage)."""
        with self._lock:
            if self._executor is not broken or self._closed:
                return
            log.error("a proving process died; starting a new proving pool")
            self._executor = self._new_executor()
            self.rebuilds += 1
        broken.shutdown(wait=False, cancel_futures=True)

    @property
    def inflight(self) -> int:
        """Calls submitted and not yet returned (tests wait on it before killing a child)."""
        with self._lock:
            return self._inflight

    def pids(self) -> list[int]:
        """The pids of the current executor's live children (started lazily, on demand)."""
        with self._lock:
            executor = self._executor
        procs = dict(getattr(executor, "_processes", None) or {}) if executor is not None else {}
        return [pid for pid, proc in procs.items() if proc.is_alive()]

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
