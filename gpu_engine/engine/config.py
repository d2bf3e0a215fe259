"""The engine's configuration: everything `runprover` decides, with defaults from settings."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings


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
