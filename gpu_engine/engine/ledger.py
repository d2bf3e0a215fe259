"""The settlement ledger: the jobs this engine holds and the one exit of every partition.

The rules kept here: every scheduled partition ends in exactly one `settle` (budget bytes
returned, history row written), tracker calls are made under the ledger's lock in the order the
work happens, and a job is finished (database write, then `tracker.job_completed`) only when none
of its partitions is still in flight. Every other engine thread changes job state only through
this object, holding `ledger.lock`.
"""
from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable

from gpu_engine import history_rollup, queue, tallies
from gpu_engine.budget import MemoryBudget
from gpu_engine.engine.config import EngineConfig
from gpu_engine.engine.history import HistoryWriter
from gpu_engine.engine.state import (
    STOP_CANCELLED,
    STOP_FAILED,
    STOP_LOST,
    STOP_RETURNED,
    ActiveJob,
    JobEvent,
    RunState,
    Work,
)
from gpu_engine.engine.stats import EngineStats
from gpu_engine.models import PartitionState
from gpu_engine.tracker import StatusTracker

log = logging.getLogger("gpu_engine.engine")


def wall(ts: float | None) -> datetime | None:
    """A unix time as an aware UTC datetime (the history row's columns)."""
    return None if ts is None else datetime.fromtimestamp(ts, tz=timezone.utc)

# How a job stopped short is shown live: only a real failure counts as failed.
_TRACKER_OUTCOME = {STOP_CANCELLED: "cancelled", STOP_LOST: "requeued", STOP_RETURNED: "requeued"}


class Ledger:
    def __init__(self, config: EngineConfig, tracker: StatusTracker, budget: MemoryBudget,
                 history: HistoryWriter, stats: EngineStats, run: RunState,
                 make_bundle: Callable[[ActiveJob, list[Any]], dict[str, Any]]) -> None:
        self.config, self.tracker, self.budget = config, tracker, budget
        self.history, self.stats, self.run = history, stats, run
        self._make_bundle = make_bundle
        self.lock = threading.RLock()
        self.active: dict[str, ActiveJob] = {}
        self.listeners: list[Callable[[JobEvent], None]] = []

    def active_ids(self) -> list[str]:
        with self.lock:
            return list(self.active)

    def partition_error(self, work: Work, stage: str, exc: BaseException, *,
                        finalize_span: tuple[float, float] | None = None) -> None:
        """A failed attempt: retried while attempts remain, else the job fails with the error."""
        job, index = work.job, work.index
        error = f"{stage}: {type(exc).__name__}: {exc}"
        log.warning("job %s partition %d failed in %s: %s", job.job_id, index, stage, exc)
        with self.lock:
            job.attempts[index] += 1
            self.tracker.partition_failed(job.job_id, index, error)
            # An error that says the input itself is wrong (retriable = False) fails at once.
            retriable = getattr(exc, "retriable", True)
            if job.stop is None and retriable and job.attempts[index] < self.config.partition_attempts:
                self.tracker.partition_retry(job.job_id, index)
                job.retry.append(index)
                self.settle(work, PartitionState.RETRIED, error, finalize_span=finalize_span)
                self.run.wake.set()
                return
            if job.stop is None:
                job.stop = (STOP_FAILED, f"partition {index} failed {job.attempts[index]} time(s); last: {error}")
            self.settle(work, PartitionState.FAILED, error, finalize_span=finalize_span)

    def settle_if_stopped(self, work: Work) -> bool:
        """Settle a partition of a job that was stopped meanwhile (call with the lock held)."""
        if work.job.stop is None:
            return False
        self.settle(work, PartitionState.CANCELLED, work.job.stop[1], tracker_fail=True)
        return True

    def settle(self, work: Work, state: str, error: str, *, tracker_fail: bool = False,
               finalize_ms: float | None = None, finalize_span: tuple[float, float] | None = None) -> None:
        """The one exit of a scheduled partition (call with the lock held); `finalize_span` is the
        wall-clock (start, end) of its CPU tail when it got that far."""
        job = work.job
        if tracker_fail:
            self.tracker.partition_failed(job.job_id, work.index, error)
        job.outstanding -= 1
        work.witness = None
        self.budget.release(work.nbytes)
        fin_start, fin_end = finalize_span or (None, None)
        self.history.record_partition(
            job_id=job.pk, index=work.index, attempt=job.attempt, state=state, synth_ms=work.synth_ms,
            gpu_ms=work.gpu_ms, finalize_ms=finalize_ms, worker_id=work.worker_id, gpu_ordinal=work.gpu_ordinal,
            engine_id=self.config.engine_id, error=error, proof_kind=job.kind,
            synth_started_at=wall(work.synth_started), synth_ended_at=wall(work.synth_ended),
            gpu_started_at=wall(work.gpu_started), gpu_ended_at=wall(work.gpu_ended),
            finalize_started_at=wall(fin_start), finalize_ended_at=wall(fin_end), ended_at=wall(time.time()),
        )
        self._maybe_finish(job)

    def stop_job(self, job: ActiveJob, reason: str, message: str) -> None:
        with self.lock:
            if job.stop is None:
                job.stop = (reason, message)
            self._maybe_finish(job)
        self.run.wake.set()

    def return_all(self) -> None:
        for job in list(self.active.values()):
            self.stop_job(job, STOP_RETURNED, "engine stopping; returned to the queue")

    def abandon_all(self) -> None:
        """After an engine crash: give every job still held back to the queue now, in the database,
        without waiting for partitions a dead thread will never settle (those settle into nothing)."""
        with self.lock:
            held = list(self.active.values())
            for job in held:
                job.finishing = True
                if job.stop is None:
                    job.stop = (STOP_RETURNED, "engine crashed; returned to the queue")
        for job in held:
            try:
                queue.return_job(job.pk, self.config.engine_id)
            except Exception:  # the lease expires and the job is requeued anyway
                log.exception("job %s: could not return it to the queue", job.job_id)
            assert job.stop is not None  # set above, under the lock
            self._finished(job, False, job.stop[1])

    def _maybe_finish(self, job: ActiveJob) -> None:
        if job.finishing:
            return
        if job.stop is None and len(job.proofs) == job.total and job.outstanding == 0:
            job.finishing = True
            self.history.submit(lambda: self._store_done(job))
        elif job.stop is not None and job.outstanding == 0:
            job.finishing = True
            for index in job.unscheduled():
                self.tracker.partition_failed(job.job_id, index, f"not run: {job.stop[1]}")
            self.history.submit(lambda: self._store_stopped(job))

    def _store_done(self, job: ActiveJob) -> None:
        """History thread: assemble and store the bundle, then tell the tracker."""
        ok, error = False, ""
        try:
            bundle = self._make_bundle(job, [job.proofs[i] for i in range(job.total)])
            timings = job.timings()
            ok = queue.complete_job(job.pk, self.config.engine_id, bundle, timings,
                                    vk_fingerprint=str(bundle.get("vk_fingerprint", "")))
            if ok:
                tallies.record_durations([(self.config.engine_id, job.kind, tallies.PHASE_JOB,
                                           timings["wall_ms"] / 1000.0)])
                history_rollup.record_job_done(job.pk)
            if not ok:
                error = "result discarded: the job was cancelled or re-claimed meanwhile"
                log.warning("job %s: %s", job.job_id, error)
        except Exception as exc:  # a job that cannot be stored fails; the engine goes on
            error = f"assembly: {type(exc).__name__}: {exc}"
            log.exception("job %s: could not store its bundle", job.job_id)
            queue.fail_job(job.pk, self.config.engine_id, error, job.timings())
        self._finished(job, ok, error)

    def _store_stopped(self, job: ActiveJob) -> None:
        assert job.stop is not None  # scheduled by _maybe_finish only once a stop is set; it never clears
        reason, message = job.stop
        if reason == STOP_FAILED:
            queue.fail_job(job.pk, self.config.engine_id, message, job.timings())
        elif reason == STOP_RETURNED:
            queue.return_job(job.pk, self.config.engine_id)
        self._finished(job, False, message)

    def _finished(self, job: ActiveJob, success: bool, error: str) -> None:
        reason = job.stop[0] if job.stop is not None else None
        outcome = _TRACKER_OUTCOME.get(reason) if not success and reason is not None else None
        with self.lock:
            self.tracker.job_completed(job.job_id, success, outcome=outcome)
            self.active.pop(job.job_id, None)
        event = JobEvent(job.job_id, job.kind, success, time.monotonic() - job.started, error,
                         cancelled=reason == STOP_CANCELLED)
        if job.stop is None or job.stop[0] != STOP_RETURNED:
            self.announce(event)
        self.run.wake.set()

    def announce(self, event: JobEvent) -> None:
        """A job reached its end here: count it and tell the listeners."""
        self.stats.record_job(event)
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:  # a listener's bug must not stop the engine
                log.exception("job listener failed")
