"""The tracker's plain records (slotted: the hot path touches them a lot)."""
from __future__ import annotations

from collections.abc import Hashable

from gpu_engine.kinds import kind_label
from gpu_engine.vocabulary import IDLE, PENDING


class TrackerError(ValueError):
    """An unknown id or an impossible transition; raised before any state changes."""


class WorkerRecord:
    __slots__ = ("worker_id", "gpu_ordinal", "state", "job_id", "partition", "proof_kind",
                 "busy_since", "error")

    def __init__(self, worker_id: Hashable, gpu_ordinal: int) -> None:
        self.worker_id = worker_id
        self.gpu_ordinal = gpu_ordinal
        self.state: str = IDLE
        self.job_id: str | None = None
        self.partition: int | None = None
        self.proof_kind: str | None = None
        self.busy_since: float | None = None
        self.error: str | None = None


class PartitionRecord:
    __slots__ = ("state", "synth_start", "synth_end", "gpu_start", "gpu_end", "fin_start",
                 "fin_end", "worker_id", "error")
    state: str
    synth_start: float | None
    synth_end: float | None
    gpu_start: float | None
    gpu_end: float | None
    fin_start: float | None
    fin_end: float | None
    worker_id: Hashable | None
    error: str | None

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.state = PENDING
        self.synth_start = self.synth_end = None
        self.gpu_start = self.gpu_end = None
        self.fin_start = self.fin_end = None
        self.worker_id = None
        self.error = None

    def close_open_phase(self, now: float) -> None:
        if self.synth_start is not None and self.synth_end is None:
            self.synth_end = now
        if self.gpu_start is not None and self.gpu_end is None:
            self.gpu_end = now
        if self.fin_start is not None and self.fin_end is None:
            self.fin_end = now


class JobRecord:
    __slots__ = ("job_id", "proof_kind", "label", "partitions", "registered", "running",
                 "finished_at", "success", "outcome", "done", "active")

    def __init__(self, job_id: str, proof_kind: str, total: int, now: float) -> None:
        self.job_id = job_id
        self.proof_kind = proof_kind
        self.label = kind_label(proof_kind)
        self.partitions = [PartitionRecord() for _ in range(total)]
        self.registered = now
        self.running = False          # some partition has left `pending`
        self.finished_at: float | None = None
        self.success: bool | None = None
        self.outcome: str | None = None  # done / failed / cancelled / requeued, once finished
        self.done = 0                 # partitions in `done`
        self.active = 0               # partitions in ACTIVE_PHASES
