"""Counters for progress lines and the benchmark (process-local, not part of any contract)."""
from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict

from gpu_engine.engine.state import JobEvent


class EngineStats:
    """Counters for progress lines and the benchmark: outcomes by kind, phase sums, busy intervals."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.done_by_kind: Counter[str] = Counter()
        self.failed_by_kind: Counter[str] = Counter()
        self.cancelled_by_kind: Counter[str] = Counter()
        self.phase_ms: dict[str, list[float]] = defaultdict(list)
        self.busy: dict[int, list[tuple[float, float]]] = defaultdict(list)
        self.finish_times: list[tuple[float, str]] = []
        self.proved_in: dict[str, Counter[int]] = defaultdict(Counter)  # stage -> pid -> partitions

    def record_proved_in(self, stage: str, pid: int) -> None:
        """Which process ran a stage ("device", "finalize") of a partition: this one or a pool child."""
        with self.lock:
            self.proved_in[stage][pid] += 1

    def record_busy(self, worker_id: int, start: float, end: float) -> None:
        with self.lock:
            self.busy[worker_id].append((start, end))

    def record_phases(self, **phases: float | None) -> None:
        with self.lock:
            for name, ms in phases.items():
                if ms is not None:
                    self.phase_ms[name].append(ms)

    def record_job(self, event: JobEvent) -> None:
        with self.lock:
            by_outcome = {"done": self.done_by_kind, "cancelled": self.cancelled_by_kind}
            by_outcome.get(event.outcome, self.failed_by_kind)[event.proof_kind] += 1
            self.finish_times.append((time.monotonic(), event.proof_kind))

    def busy_fraction(self, start: float, end: float) -> dict[int, float]:
        """Per worker: the share of [start, end] spent in the device part."""
        span = max(end - start, 1e-9)
        with self.lock:
            return {
                wid: sum(max(0.0, min(b, end) - max(a, start)) for a, b in spans) / span
                for wid, spans in self.busy.items()
            }
