"""The engine's configuration and its in-memory bookkeeping of claimed jobs and partitions."""
from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

# Why a claimed job stopped short of `done`; each maps to one database action (see Engine).
STOP_FAILED = "failed"        # a partition ran out of attempts: the job fails with the error
STOP_CANCELLED = "cancelled"  # cancelled in the database: nothing to write
STOP_LOST = "lost"            # the lease is held by someone else now: nothing to write
STOP_RETURNED = "returned"    # this engine is shutting down: the job goes back to the queue


def _default_heartbeat() -> float:
    return max(0.05, min(float(settings.HEARTBEAT_SECS), float(settings.JOB_LEASE_SECS) / 3))


@dataclass
class EngineConfig:
    """Everything `runprover` decides; defaults come from settings so tests can override them."""

    engine_id: str
    backend: str = "cpu"
    gpus: list[int] = field(default_factory=lambda: [0])
    workers_per_device: int = 1
    synth_workers: int = 1
    finalizers: int = 1
    memory_budget: int = 4 * 1024**3
    scale: int = field(default_factory=lambda: int(settings.CIRCUIT_SCALE))
    params_dir: Path = field(default_factory=lambda: Path(settings.PARAMS_DIR))
    lease_secs: float = field(default_factory=lambda: float(settings.JOB_LEASE_SECS))
    heartbeat_secs: float = field(default_factory=_default_heartbeat)
    poll_secs: float = 0.25
    drain_secs: float = 30.0
    partition_attempts: int = 3
    finalize_delay_secs: float = 0.0  # tests: make the CPU tail slower than the device part
    # Processes running the CPU-heavy proving work off the web process's GIL (see proving_pool.py):
    # None = one per worker and finalizer that submits there, at most one per core; 0 = in-thread.
    proving_processes: int | None = None
    grace_secs: float = field(default_factory=lambda: float(settings.TRACKER_GRACE_SECS))

    def __post_init__(self) -> None:
        checks = [
            (self.workers_per_device >= 1, "workers per device must be >= 1"),
            (self.synth_workers >= 1, "synthesis workers must be >= 1"),
            (self.finalizers >= 1, "finalizers must be >= 1"),
            (self.memory_budget > 0, "the memory budget must be positive"),
            (self.scale >= 1, "circuit scale must be >= 1"),
            (bool(self.gpus), "at least one device is needed"),
            (self.lease_secs > 0 and self.heartbeat_secs > 0, "lease and heartbeat must be positive"),
            (self.heartbeat_secs < self.lease_secs, "the heartbeat must be shorter than the lease"),
            (self.partition_attempts >= 1, "partition attempts must be >= 1"),
            (self.proving_processes is None or self.proving_processes >= 0, "proving processes must be >= 0"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    def worker_ids(self) -> list[tuple[int, int]]:
        # Numeric ids, as cuzk's: the panel shows them as W0, W1, ...; the ordinal says the device.
        return list(enumerate(g for g in self.gpus for _ in range(self.workers_per_device)))


class ActiveJob:
    """A job this engine holds a lease on; mutated only under the engine's lock."""

    def __init__(self, pk: int, job_id: str, kind: str, priority: int, seq: int, total: int) -> None:
        self.pk, self.job_id, self.kind = pk, job_id, kind
        self.priority, self.seq, self.total = priority, seq, total
        self.started = time.monotonic()
        self.next_index = 0
        self.retry: list[int] = []
        self.outstanding = 0            # partitions scheduled and not yet settled (they hold budget)
        self.proofs: dict[int, Any] = {}
        self.attempts: Counter[int] = Counter()
        self.stop: tuple[str, str] | None = None   # (STOP_*, message)
        self.finishing = False
        self.sums: dict[str, float] = defaultdict(float)

    def next_partition(self) -> int | None:
        if self.stop is not None:
            return None
        if self.retry:
            return self.retry[0]
        return self.next_index if self.next_index < self.total else None

    def take(self, index: int) -> None:
        if self.retry and self.retry[0] == index:
            self.retry.pop(0)
        else:
            assert index == self.next_index
            self.next_index += 1
        self.outstanding += 1

    def unscheduled(self) -> list[int]:
        return list(self.retry) + list(range(self.next_index, self.total))

    def timings(self) -> dict[str, Any]:
        n = max(len(self.proofs), 1)
        out: dict[str, Any] = {"wall_ms": round((time.monotonic() - self.started) * 1000, 3),
                               "partitions": len(self.proofs)}
        for key, total in sorted(self.sums.items()):
            out[f"total_{key}"] = round(total, 3)
            out[f"mean_{key}"] = round(total / n, 3)
        return out


class Work:
    """One scheduled partition travelling through the pipeline."""

    __slots__ = ("job", "index", "nbytes", "witness", "synth_ms", "gpu_ms", "worker_id", "gpu_ordinal")

    def __init__(self, job: ActiveJob, index: int, nbytes: int) -> None:
        self.job, self.index, self.nbytes = job, index, nbytes
        self.witness: Any = None
        self.synth_ms: float | None = None
        self.gpu_ms: float | None = None
        self.worker_id = ""
        self.gpu_ordinal: int | None = None


@dataclass
class JobEvent:
    job_id: str
    proof_kind: str
    success: bool
    wall_secs: float
    error: str = ""


class EngineStats:
    """Counters for progress lines and the benchmark: outcomes by kind, phase sums, busy intervals."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.done_by_kind: Counter[str] = Counter()
        self.failed_by_kind: Counter[str] = Counter()
        self.phase_ms: dict[str, list[float]] = defaultdict(list)
        self.busy: dict[str, list[tuple[float, float]]] = defaultdict(list)
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
            (self.done_by_kind if event.success else self.failed_by_kind)[event.proof_kind] += 1
            self.finish_times.append((time.monotonic(), event.proof_kind))

    def busy_fraction(self, start: float, end: float) -> dict[str, float]:
        """Per worker: the share of [start, end] spent in the device part."""
        span = max(end - start, 1e-9)
        with self.lock:
            return {
                wid: sum(max(0.0, min(b, end) - max(a, start)) for a, b in spans) / span
                for wid, spans in self.busy.items()
            }
