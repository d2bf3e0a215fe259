"""StatusTracker: what every GPU worker and every partition of this engine is doing, right now.

The engine's threads report transitions here; the panel reads `snapshot()`. Two rules exist
because a tracker that breaks them lies to the operator:

* a worker is released only by the assignment that holds it (same job *and* partition), so a
  late finalizer of job A cannot mark a worker idle while it proves job B (split proving);
* ids and kind names are stored and reported whole, never shortened.

Every call is one short critical section with no I/O; illegal calls (unknown ids, impossible
transitions) raise `TrackerError` before touching state. Each mutation bumps `seq` so a
publisher can sleep in `wait_for_change`. Finished jobs stay visible for `grace_secs`, then are
purged lazily (on job registration and completion, snapshots and waits) against the
injectable clock.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any

from gpu_engine.schema import Snapshot
from gpu_engine.tracker.records import JobRecord, PartitionRecord, TrackerError, WorkerRecord
from gpu_engine.tracker.snapshot import format_snapshot
from gpu_engine.vocabulary import (
    ACTIVE_PHASES,
    CANCELLED,
    DONE,
    ERROR,
    FAILED,
    FINALIZING,
    GPU,
    GPU_KEYS,
    IDLE,
    JOB_OUTCOMES,
    PENDING,
    PROVING,
    REQUEUED,
    SYNTH_DONE,
    SYNTHESIZING,
)

if TYPE_CHECKING:
    from gpu_engine.budget import MemoryBudget


class StatusTracker:
    def __init__(self, *, budget: MemoryBudget | None = None, synth_max: int = 0, backend: str = "cpu",
                 grace_secs: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        if grace_secs < 0:
            raise ValueError(f"grace_secs must be >= 0, got {grace_secs!r}")
        self._cond = threading.Condition(threading.Lock())
        self._lock = self._cond  # `with self._lock` holds the condition's lock
        self._clock = clock
        self._budget = budget
        self._synth_max = int(synth_max)
        self._backend = str(backend)
        self._grace = float(grace_secs)
        self._created = clock()
        self._seq = 0
        self._waiters = 0
        self._workers: dict[Hashable, WorkerRecord] = {}
        self._jobs: dict[str, JobRecord] = {}
        self._finished: dict[str, JobRecord] = {}   # finished jobs in finish order, awaiting purge
        self._next_purge = math.inf   # earliest end of a grace period
        self._stuck = False           # a job past grace still has active partitions
        self._synth_active = 0
        self._gpus: list[dict[str, Any]] = []
        self._total_completed = 0
        self._total_failed = 0
        self._total_cancelled = 0
        self._completed_by_kind: dict[str, int] = {}
        self._failed_by_kind: dict[str, int] = {}
        self._queue_depth = 0

    # ---- internals (call with the lock held) ---------------------------------------------

    def _changed(self) -> None:
        self._seq += 1
        if self._waiters:
            self._cond.notify_all()

    def _job(self, job_id: str) -> JobRecord:
        job = self._jobs.get(job_id)
        if job is None:
            raise TrackerError(f"unknown job id {job_id!r}")
        return job

    def _part(self, job_id: str, p: int) -> tuple[JobRecord, PartitionRecord]:
        job = self._jobs.get(job_id)
        if job is None:
            raise TrackerError(f"unknown job id {job_id!r}")
        parts = job.partitions
        if type(p) is int and 0 <= p < len(parts):
            return job, parts[p]
        raise TrackerError(f"job {job_id!r} has no partition {p!r} (valid: 0..{len(parts) - 1})")

    def _worker(self, worker_id: Hashable) -> WorkerRecord:
        w = self._workers.get(worker_id)
        if w is None:
            raise TrackerError(f"unknown worker id {worker_id!r}")
        return w

    def _release(self, worker_id: Hashable | None, job_id: str, p: int) -> None:
        """Free `worker_id` only if it still holds exactly (job_id, p): the split-proving guard."""
        w = self._workers.get(worker_id)
        if w is not None and w.state is PROVING and w.partition == p and w.job_id == job_id:
            w.state = IDLE
            w.job_id = w.partition = w.proof_kind = w.busy_since = None

    def _held_in_gpu(self, w: WorkerRecord) -> PartitionRecord | None:
        """The partition a proving worker holds, if it is in `gpu` on that worker (it always is)."""
        job = None if w.job_id is None else self._jobs.get(w.job_id)
        if job is None or w.partition is None or not 0 <= w.partition < len(job.partitions):
            return None
        part = job.partitions[w.partition]
        return part if part.state is GPU and part.worker_id == w.worker_id else None

    def _leave(self, job: JobRecord, part: PartitionRecord) -> None:
        """Bookkeeping for a partition leaving its phase by failure or retry."""
        old = part.state
        if old in ACTIVE_PHASES:
            job.active -= 1
            if old is SYNTHESIZING:
                self._synth_active -= 1
        elif old is DONE:
            job.done -= 1

    def _bad(self, job_id: str, p: int, part: PartitionRecord, call: str) -> TrackerError:
        return TrackerError(f"{call}: job {job_id!r} partition {p} is {part.state!r}")

    def _purge(self, now: float) -> None:
        """Drop finished jobs whose grace period is over, unless a partition is still worked on."""
        if now < self._next_purge and not self._stuck:
            return
        horizon = now - self._grace
        nxt = math.inf
        stuck = purged = False
        for job_id, job in list(self._finished.items()):
            finished_at = job.finished_at
            if finished_at is None:  # only finished jobs are in _finished
                continue
            if finished_at <= horizon:
                if job.active == 0:
                    del self._finished[job_id]
                    del self._jobs[job_id]
                    purged = True
                else:
                    stuck = True       # re-checked on later calls until its partitions settle
            elif finished_at + self._grace < nxt:
                nxt = finished_at + self._grace
        self._next_purge = nxt
        self._stuck = stuck
        if purged:
            self._changed()

    # ---- configuration --------------------------------------------------------------------

    def register_workers(self, workers: Iterable[tuple[Hashable, int]]) -> None:
        """Add workers (or update the GPU ordinal of known ones); order is display order."""
        pairs = [(wid, int(ordinal)) for wid, ordinal in workers]
        with self._lock:
            for wid, ordinal in pairs:
                w = self._workers.get(wid)
                if w is None:
                    self._workers[wid] = WorkerRecord(wid, ordinal)
                else:
                    w.gpu_ordinal = ordinal
            self._changed()

    def set_backend(self, name: str) -> None:
        with self._lock:
            self._backend = str(name)
            self._changed()

    def set_gpus(self, gpus: list[dict[str, Any]]) -> None:
        """The snapshot's `gpus` list (telemetry); each needs an `ordinal`, missing keys are None."""
        rows = []
        for g in gpus:
            if not isinstance(g, dict) or "ordinal" not in g:
                raise TrackerError(f"each GPU entry must be a dict with an 'ordinal', got {g!r}")
            row = {k: g.get(k) for k in GPU_KEYS}
            row.update(g)
            rows.append(row)
        with self._lock:
            self._gpus = rows
            self._changed()

    def set_queue_depth(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise TrackerError(f"queue depth must be a non-negative int, got {n!r}")
        with self._lock:
            if n != self._queue_depth:
                self._queue_depth = n
                self._changed()

    # ---- jobs -----------------------------------------------------------------------------

    def register_job(self, job_id: str, proof_kind: str, total_partitions: int) -> None:
        """Show a job (any partition count, 1 included) from the moment it is claimed."""
        if not isinstance(job_id, str) or not job_id:
            raise TrackerError(f"job id must be a non-empty string, got {job_id!r}")
        if not isinstance(proof_kind, str) or not proof_kind:
            raise TrackerError(f"proof kind must be a non-empty string, got {proof_kind!r}")
        if isinstance(total_partitions, bool) or not isinstance(total_partitions, int) or total_partitions < 1:
            raise TrackerError(f"total_partitions must be a positive int, got {total_partitions!r}")
        now = self._clock()
        with self._lock:
            self._purge(now)
            old = self._jobs.get(job_id)
            if old is not None:
                if old.finished_at is None or old.active:
                    raise TrackerError(f"job {job_id!r} is already registered and still running")
                del self._finished[job_id]     # a re-run replaces the finished entry
            self._jobs[job_id] = JobRecord(job_id, proof_kind, total_partitions, now)
            self._changed()

    def job_completed(self, job_id: str, success: bool, *, outcome: str | None = None) -> None:
        """Finish a job once: counted by kind, kept visible for the grace period.

        `outcome` tells an unsuccessful end that is not a failure apart, so the failure counters
        stay honest: "cancelled" (counted in total_cancelled) or "requeued" (handed back to the
        queue by a stopping engine or a lost lease; counted nowhere, another run will finish it).
        """
        if outcome is not None and outcome not in JOB_OUTCOMES:
            raise TrackerError(f"unknown outcome {outcome!r}; use 'cancelled' or 'requeued'")
        if outcome is not None and success:
            raise TrackerError(f"a {outcome} job cannot be successful")
        now = self._clock()
        with self._lock:
            job = self._job(job_id)
            if job.finished_at is not None:
                raise TrackerError(f"job {job_id!r} was already completed")
            if success and job.done != len(job.partitions):
                raise TrackerError(f"job {job_id!r} cannot succeed with {job.done} of "
                                   f"{len(job.partitions)} partitions done")
            job.finished_at = now
            job.success = bool(success)
            kind = job.proof_kind
            job.outcome = outcome or (DONE if success else FAILED)
            if outcome == CANCELLED:
                self._total_cancelled += 1
            elif outcome == REQUEUED:
                pass
            elif success:
                self._total_completed += 1
                self._completed_by_kind[kind] = self._completed_by_kind.get(kind, 0) + 1
            else:
                self._total_failed += 1
                self._failed_by_kind[kind] = self._failed_by_kind.get(kind, 0) + 1
            self._finished[job_id] = job
            self._next_purge = min(self._next_purge, now + self._grace)
            self._purge(now)
            self._changed()

    # ---- partitions -----------------------------------------------------------------------

    def partition_synth_start(self, job_id: str, p: int) -> None:
        now = self._clock()
        with self._lock:
            job, part = self._part(job_id, p)
            if part.state is not PENDING:
                raise self._bad(job_id, p, part, "partition_synth_start")
            part.state = SYNTHESIZING
            part.synth_start = now
            job.running = True
            job.active += 1
            self._synth_active += 1
            self._changed()

    def partition_synth_end(self, job_id: str, p: int) -> None:
        now = self._clock()
        with self._lock:
            job, part = self._part(job_id, p)
            if part.state is not SYNTHESIZING:
                raise self._bad(job_id, p, part, "partition_synth_end")
            part.state = SYNTH_DONE
            part.synth_end = now
            job.active -= 1
            self._synth_active -= 1
            self._changed()

    def partition_gpu_start(self, job_id: str, p: int, worker_id: Hashable) -> None:
        """Worker takes the partition; a worker in `error` that is handed work has recovered.

        A worker still proving another partition is cuzk's call sequence (it starts its next
        partition before the finalizer of the previous one reports, with no finalize_start): that
        is split proving, so the previous partition moves to `finalizing` and the worker takes this one.
        """
        now = self._clock()
        with self._lock:
            job, part = self._part(job_id, p)
            w = self._worker(worker_id)
            if part.state is not SYNTH_DONE and part.state is not PENDING:
                raise self._bad(job_id, p, part, "partition_gpu_start")
            if w.state is PROVING:
                previous = self._held_in_gpu(w)
                if previous is None:
                    raise TrackerError(f"partition_gpu_start: worker {worker_id!r} is still proving job "
                                       f"{w.job_id!r} partition {w.partition}")
                previous.state = FINALIZING   # implicit finalize_start of the previous partition
                previous.gpu_end = now
                previous.fin_start = now
            part.state = GPU
            part.gpu_start = now
            part.worker_id = worker_id
            job.running = True
            job.active += 1
            w.state = PROVING
            w.job_id = job_id
            w.partition = p
            w.proof_kind = job.proof_kind
            w.busy_since = now
            w.error = None
            self._changed()

    def partition_finalize_start(self, job_id: str, p: int, worker_id: Hashable) -> None:
        """Split proving: the device part is done, the CPU tail goes to a finalizer."""
        now = self._clock()
        with self._lock:
            job, part = self._part(job_id, p)
            if part.state is not GPU:
                raise self._bad(job_id, p, part, "partition_finalize_start")
            if part.worker_id != worker_id:
                raise TrackerError(f"partition_finalize_start: job {job_id!r} partition {p} runs on "
                                   f"worker {part.worker_id!r}, not {worker_id!r}")
            part.state = FINALIZING
            part.gpu_end = now
            part.fin_start = now
            self._release(worker_id, job_id, p)
            self._changed()

    def partition_gpu_end(self, job_id: str, p: int, worker_id: Hashable) -> None:
        """The partition is proven (from `gpu`, or from `finalizing` when split)."""
        now = self._clock()
        with self._lock:
            job, part = self._part(job_id, p)
            state = part.state
            if state is GPU:
                if part.worker_id != worker_id:
                    raise TrackerError(f"partition_gpu_end: job {job_id!r} partition {p} runs on "
                                       f"worker {part.worker_id!r}, not {worker_id!r}")
                part.gpu_end = now
            elif state is FINALIZING:
                part.fin_end = now
            else:
                raise self._bad(job_id, p, part, "partition_gpu_end")
            part.state = DONE
            job.active -= 1
            job.done += 1
            self._release(worker_id, job_id, p)
            self._changed()

    def partition_failed(self, job_id: str, p: int, error: str) -> None:
        """Mark the partition failed with its error and free the worker that holds it."""
        now = self._clock()
        with self._lock:
            job, part = self._part(job_id, p)
            if part.state is DONE:
                raise self._bad(job_id, p, part, "partition_failed")
            if part.state is FAILED:       # a second report of the same failure keeps the first cause
                return
            self._leave(job, part)
            part.close_open_phase(now)
            part.state = FAILED
            part.error = str(error)
            job.running = True
            self._release(part.worker_id, job_id, p)
            self._changed()

    def partition_retry(self, job_id: str, p: int) -> None:
        """Back to `pending` with the error and timings cleared (the guarded worker is freed)."""
        with self._lock:
            job, part = self._part(job_id, p)
            if part.state is DONE:
                raise self._bad(job_id, p, part, "partition_retry")
            if job.finished_at is not None:
                raise TrackerError(f"partition_retry: job {job_id!r} is already completed")
            self._leave(job, part)
            self._release(part.worker_id, job_id, p)
            part.reset()
            self._changed()

    # ---- workers --------------------------------------------------------------------------

    def worker_error(self, worker_id: Hashable, error: str) -> None:
        """The worker broke (e.g. a CUDA error): its partition fails, the worker shows `error`."""
        now = self._clock()
        with self._lock:
            w = self._worker(worker_id)
            if w.state is PROVING and w.job_id is not None and w.partition is not None:
                part = self._held_in_gpu(w)
                if part is not None:
                    self._leave(self._jobs[w.job_id], part)
                    part.close_open_phase(now)
                    part.state = FAILED
                    part.error = f"worker {worker_id!r}: {error}"
                self._release(worker_id, w.job_id, w.partition)
            w.state = ERROR
            w.error = str(error)
            self._changed()

    def worker_recovered(self, worker_id: Hashable) -> None:
        with self._lock:
            w = self._worker(worker_id)
            if w.state is ERROR:
                w.state = IDLE
                w.error = None
                self._changed()

    # ---- readers --------------------------------------------------------------------------

    @property
    def seq(self) -> int:
        return self._seq

    def wait_for_change(self, after_seq: int, timeout: float | None = None) -> int:
        """Sleep until `seq` exceeds `after_seq` or `timeout` passes; returns the current seq.

        Also wakes when a finished job's grace period ends, so the purge is published.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._waiters += 1
            try:
                while True:
                    self._purge(self._clock())
                    if self._seq > after_seq:
                        return self._seq
                    wait = None if deadline is None else deadline - time.monotonic()
                    if wait is not None and wait <= 0:
                        return self._seq
                    if self._next_purge < math.inf:
                        until_purge = max(self._next_purge - self._clock(), 0.01)
                        wait = until_purge if wait is None else min(wait, until_purge)
                    self._cond.wait(wait)
            finally:
                self._waiters -= 1

    def snapshot(self) -> Snapshot:
        """The snapshot (docs/SNAPSHOT.md), JSON-serializable; state is copied under the lock, formatted outside."""
        budget = self._budget
        memory = (budget.total_bytes, budget.used_bytes) if budget is not None else (0, 0)
        with self._lock:
            now = self._clock()
            self._purge(now)
            jobs = [
                (j.job_id, j.proof_kind, j.label, j.registered, j.running, j.finished_at, j.outcome,
                 j.done, len(j.partitions),
                 [(q.state, q.synth_start, q.synth_end, q.gpu_start, q.gpu_end, q.fin_start, q.fin_end,
                   q.worker_id, q.error) for q in j.partitions])
                for j in self._jobs.values()
            ]
            workers = [(w.worker_id, w.gpu_ordinal, w.state, w.job_id, w.partition, w.proof_kind,
                        w.busy_since, w.error) for w in self._workers.values()]
            state = {
                "seq": self._seq,
                "uptime": now - self._created,
                "backend": self._backend,
                "synth_max": self._synth_max,
                "synth_active": self._synth_active,
                "gpus": self._gpus,
                "total_completed": self._total_completed,
                "total_failed": self._total_failed,
                "total_cancelled": self._total_cancelled,
                "completed_by_kind": dict(self._completed_by_kind),
                "failed_by_kind": dict(self._failed_by_kind),
                "queue_depth": self._queue_depth,
            }
        return format_snapshot(now, state, memory, jobs, workers)
