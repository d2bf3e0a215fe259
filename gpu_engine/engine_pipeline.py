"""The engine's proving half: GPU workers, finalizers, settlement of partitions and jobs, heartbeat.

A mixin of `Engine` (see engine.py for the threads and their roles). The rules kept here:
every partition ends in one `_settle` (budget returned, history row written), tracker calls are
made under the engine lock in the order the work happens, and a job is finished (database write,
then `tracker.job_completed`) only when none of its partitions is still in flight.
"""
from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.utils import timezone

from gpu_engine import backends, queue
from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.engine_types import (STOP_CANCELLED, STOP_FAILED, STOP_LOST, STOP_RETURNED, ActiveJob, JobEvent,
                                     Work)
from gpu_engine.models import EngineHost, JobStatus, PartitionState, ProofJob

if TYPE_CHECKING:
    from gpu_engine.engine import Engine

log = logging.getLogger("gpu_engine.engine")

# How a job stopped short is shown live: only a real failure counts as failed.
_TRACKER_OUTCOME = {STOP_CANCELLED: "cancelled", STOP_LOST: "requeued", STOP_RETURNED: "requeued"}


class PipelineMixin:
    # ---- GPU workers -------------------------------------------------------------------

    def _open_backend(self: Engine, worker_id: int, ordinal: int):
        """Create this worker's backend in this thread; on failure show `error` and keep trying."""
        delay = 0.5
        while True:
            try:
                backend = backends.create_backend(self.config.backend, ordinal)
                self.tracker.worker_recovered(worker_id)
                return backend
            except Exception as exc:  # noqa: BLE001 - a broken device must not kill the engine
                log.error("worker %s: cannot open %s backend: %s", worker_id, self.config.backend, exc)
                self.tracker.worker_error(worker_id, f"backend unavailable: {exc}")
                if self._stopped.wait(delay) or self._draining.is_set() and not self.active_jobs:
                    return None
                delay = min(delay * 2, 10.0)

    def _worker_loop(self: Engine, worker_id: int, ordinal: int) -> None:
        backend = self._open_backend(worker_id, ordinal)
        try:
            while True:
                _, work = self._gpu_q.get()
                if work is None or work is self._STOP_ITEM:
                    break
                if backend is None:
                    backend = self._open_backend(worker_id, ordinal)
                    if backend is None:  # stopping without a device: another worker or the drain takes it
                        self._enqueue(work)
                        time.sleep(0.05)
                        continue
                if not self._device_part(work, worker_id, ordinal, backend):
                    backend.close()
                    backend = self._open_backend(worker_id, ordinal)
        finally:
            if backend is not None:
                backend.close()

    def _device_part(self: Engine, work: Work, worker_id: int, ordinal: int, backend) -> bool:
        """Run one partition's device part; False when the backend must be rebuilt."""
        job = work.job
        with self._lock:
            if job.stop is not None:
                self._settle(work, PartitionState.CANCELLED, job.stop[1], tracker_fail=True)
                return True
            self.tracker.partition_gpu_start(job.job_id, work.index, worker_id)
        work.worker_id, work.gpu_ordinal = worker_id, ordinal
        start = time.monotonic()
        try:
            out = self._run_device(work, backend)
        except self._device_errors as exc:
            self.stats.record_busy(worker_id, start, time.monotonic())
            with self._lock:
                self.tracker.worker_error(worker_id, str(exc))
            self._partition_error(work, "device", exc)
            return False
        except Exception as exc:  # noqa: BLE001
            self.stats.record_busy(worker_id, start, time.monotonic())
            self._partition_error(work, "device", exc)
            return True
        end = time.monotonic()
        self.stats.record_busy(worker_id, start, end)
        work.gpu_ms = (end - start) * 1000
        with self._lock:
            if job.stop is not None:
                self._settle(work, PartitionState.CANCELLED, job.stop[1], tracker_fail=True)
                return True
            # Split proving: the worker is released by this exact assignment and moves on.
            self.tracker.partition_finalize_start(job.job_id, work.index, worker_id)
        self._finalizer.submit(self._finalize, work, out)
        return True

    def _run_device(self: Engine, work: Work, backend) -> Any:
        """The device part: in the proving pool when the backend is the stock CPU one (its MSMs and
        NTTs hold the GIL), else here (CUDA: this thread owns the context and its waits release the
        GIL; any other backend class, such as an injected one, cannot be rebuilt in a child).
        A dead pool child raises BrokenProcessPool: a failed attempt, retried like any error."""
        kind = work.job.kind
        if self._proving is not None and type(backend) is CpuBackend:
            out, pid = self._proving.prove_device(self._params_refs[kind], work.witness)
        else:
            out, pid = self.g16.prove_device(self.params[kind], work.witness, backend), os.getpid()
        self.stats.record_proved_in("device", pid)
        return out

    def _run_finalize(self: Engine, work: Work, out: Any) -> Any:
        """The CPU tail (G2 MSM and assembly): in the proving pool whenever there is one."""
        kind = work.job.kind
        if self._proving is not None and type(self._cpu) is CpuBackend:
            proof, pid = self._proving.finalize(self._params_refs[kind], work.witness, out)
        else:
            proof, pid = self.g16.prove_finalize(self.params[kind], work.witness, out, self._cpu), os.getpid()
        self.stats.record_proved_in("finalize", pid)
        return proof

    # ---- finalizers ----------------------------------------------------------------------

    def _finalize(self: Engine, work: Work, out: Any) -> None:
        job = work.job
        params = self.params[job.kind]
        start = time.monotonic()
        try:
            if self.config.finalize_delay_secs:
                time.sleep(self.config.finalize_delay_secs)
            proof = self._run_finalize(work, out)
            if not self.g16.verify_partition(params.vk, proof.public_inputs, proof.proof):
                from gpu_engine.engine import ProofError

                raise ProofError(f"partition {work.index} of {job.job_id} does not verify")
        except Exception as exc:  # noqa: BLE001
            self._partition_error(work, "finalize", exc)
            return
        finalize_ms = (time.monotonic() - start) * 1000
        with self._lock:
            if job.stop is not None:
                self._settle(work, PartitionState.CANCELLED, job.stop[1], tracker_fail=True)
                return
            self.tracker.partition_gpu_end(job.job_id, work.index, work.worker_id)
            job.proofs[work.index] = proof
            for key, value in (proof.timings or {}).items():
                job.sums[key] += float(value)
            job.sums["gpu_ms"] += work.gpu_ms or 0.0
            job.sums["finalize_ms"] += finalize_ms
            self.stats.record_phases(synth_ms=work.synth_ms, gpu_ms=work.gpu_ms, finalize_ms=finalize_ms)
            self._settle(work, PartitionState.DONE, "", finalize_ms=finalize_ms)

    # ---- settlement ----------------------------------------------------------------------

    def _partition_error(self: Engine, work: Work, stage: str, exc: BaseException, synthesizing: bool = False) -> None:
        job, index = work.job, work.index
        error = f"{stage}: {type(exc).__name__}: {exc}"
        log.warning("job %s partition %d failed in %s: %s", job.job_id, index, stage, exc)
        with self._lock:
            if synthesizing:
                self._synth_inflight -= 1
            job.attempts[index] += 1
            self.tracker.partition_failed(job.job_id, index, error)
            if job.stop is None and job.attempts[index] < self.config.partition_attempts:
                self.tracker.partition_retry(job.job_id, index)
                job.retry.append(index)
                self._settle(work, PartitionState.RETRIED, error)
                self._wake.set()
                return
            if job.stop is None:
                job.stop = (STOP_FAILED, f"partition {index} failed {job.attempts[index]} time(s); last: {error}")
            self._settle(work, PartitionState.FAILED, error)

    def _settle(self: Engine, work: Work, state: str, error: str, *, tracker_fail: bool = False,
                finalize_ms: float | None = None) -> None:
        """The one exit of a scheduled partition (call with the lock held)."""
        job = work.job
        if tracker_fail:
            self.tracker.partition_failed(job.job_id, work.index, error)
        job.outstanding -= 1
        work.witness = None
        self.budget.release(work.nbytes)
        self.history.record_partition(
            job_id=job.pk, index=work.index, state=state, synth_ms=work.synth_ms, gpu_ms=work.gpu_ms,
            finalize_ms=finalize_ms, worker_id=work.worker_id, gpu_ordinal=work.gpu_ordinal,
            engine_id=self.config.engine_id, error=error,
        )
        self._maybe_finish(job)

    def _stop_job(self: Engine, job: ActiveJob, reason: str, message: str) -> None:
        with self._lock:
            if job.stop is None:
                job.stop = (reason, message)
            self._maybe_finish(job)
        self._wake.set()

    def _maybe_finish(self: Engine, job: ActiveJob) -> None:
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

    def _store_done(self: Engine, job: ActiveJob) -> None:
        """History thread: assemble and store the bundle, then tell the tracker."""
        ok, error = False, ""
        try:
            proofs = [job.proofs[i] for i in range(job.total)]
            bundle = self.g16.make_bundle(job.kind, job.job_id, self.params[job.kind].vk, proofs)
            ok = queue.complete_job(job.pk, self.config.engine_id, bundle, job.timings())
            if not ok:
                error = "result discarded: the job was cancelled or re-claimed meanwhile"
                log.warning("job %s: %s", job.job_id, error)
        except Exception as exc:  # noqa: BLE001
            error = f"assembly: {type(exc).__name__}: {exc}"
            log.exception("job %s: could not store its bundle", job.job_id)
            queue.fail_job(job.pk, self.config.engine_id, error, job.timings())
        self._finished(job, ok, error)

    def _store_stopped(self: Engine, job: ActiveJob) -> None:
        reason, message = job.stop
        if reason == STOP_FAILED:
            queue.fail_job(job.pk, self.config.engine_id, message, job.timings())
        elif reason == STOP_RETURNED:
            queue.return_job(job.pk, self.config.engine_id)
        self._finished(job, False, message)

    def _finished(self: Engine, job: ActiveJob, success: bool, error: str) -> None:
        reason = job.stop[0] if job.stop is not None else None
        outcome = _TRACKER_OUTCOME.get(reason) if not success else None
        with self._lock:
            self.tracker.job_completed(job.job_id, success, outcome=outcome)
            self._active.pop(job.job_id, None)
        event = JobEvent(job.job_id, job.kind, success, time.monotonic() - job.started, error)
        if job.stop is None or job.stop[0] != STOP_RETURNED:
            self.stats.record_job(event)
            for listener in self._listeners:
                try:
                    listener(event)
                except Exception:  # noqa: BLE001
                    log.exception("job listener failed")
        self._wake.set()

    def _return_all(self: Engine) -> None:
        for job in list(self._active.values()):
            self._stop_job(job, STOP_RETURNED, "engine stopping; returned to the queue")

    # ---- heartbeat -----------------------------------------------------------------------

    def _heartbeat_loop(self: Engine) -> None:
        try:
            while not self._hb_stop.wait(self.config.heartbeat_secs):
                try:
                    self._beat()
                except Exception:  # noqa: BLE001 - a database hiccup must not stop renewals
                    log.exception("heartbeat failed")
                    connection.close()
        finally:
            connection.close()

    def _beat(self: Engine) -> None:
        cfg = self.config
        with self._lock:
            held = {job.pk: job for job in self._active.values()}
        # Finishing jobs are renewed too: the lease must outlive the write of their result.
        for pk in queue.renew_leases(cfg.engine_id, held, cfg.lease_secs):
            job = held[pk]
            if job.finishing:
                continue
            status = ProofJob.objects.filter(pk=pk).values_list("status", flat=True).first()
            if status == JobStatus.CANCELLED:
                self._stop_job(job, STOP_CANCELLED, "cancelled")
            else:
                self._stop_job(job, STOP_LOST, f"lease lost (job is {status or 'gone'})")
        EngineHost.objects.filter(engine_id=cfg.engine_id).update(last_heartbeat=timezone.now())
        queue.requeue_expired()
        depth = queue.queue_depth()
        self.tracker.set_queue_depth(depth)
        if depth:
            self._wake.set()
