"""The feeder: claims jobs from the durable queue and schedules their partitions' synthesis.

It claims only while the pipeline has room at every stage (about two partitions waiting per worker,
and no more partitions held anywhere than the stages work on at once plus that margin), so an
engine never hoards leases it cannot work on; each partition reserves its memory-budget bytes
before synthesis and holds them until its settlement.
"""
from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable

from django.db import connection

from gpu_engine import queue
from gpu_engine.engine.circuits import CircuitKinds, CircuitUnavailable
from gpu_engine.engine.config import EngineConfig
from gpu_engine.engine.ledger import Ledger
from gpu_engine.engine.pools import BrokenProcessPool, ProcessPool
from gpu_engine.engine.state import ActiveJob, JobEvent, RunState, Work, WorkQueue
from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.validation import row_problem

# After a crash, how long held jobs get to settle before they are given back as they are.
CRASH_SETTLE_SECS = 5.0

log = logging.getLogger("gpu_engine.engine")


class Feeder:
    def __init__(self, config: EngineConfig, ledger: Ledger, work: WorkQueue, run: RunState,
                 synthesize: Callable[..., Any], part_bytes: dict[str, int], workers: int,
                 circuits: CircuitKinds | None = None) -> None:
        self.config, self.ledger, self.work, self.run = config, ledger, work, run
        self._synthesize, self._part_bytes, self._workers = synthesize, part_bytes, workers
        self._circuits = circuits
        self._claims = itertools.count()
        self._slots = threading.Semaphore(config.synth_workers)
        self._inflight = 0
        # Partitions held anywhere (synthesis, the GPU queue and workers, the finalizers' backlog)
        # past which no new job is claimed: each stage's concurrency plus about two waiting per worker.
        self._held_cap = config.synth_workers + 2 * workers + 2 * config.finalizers
        self.pool = ProcessPool("synthesis", config.synth_workers)

    def run_loop(self, on_exit: Callable[[], None]) -> None:
        """Until drained: schedule held partitions, claim more when there is room."""
        run, ledger = self.run, self.ledger
        self.pool.start()
        try:
            while True:
                if run.draining.is_set():
                    if run.past_deadline():
                        ledger.return_all()
                    if run.fatal is not None and run.past_deadline(CRASH_SETTLE_SECS):
                        ledger.abandon_all()  # a crashed thread may hold partitions that never settle
                    with ledger.lock:
                        if not ledger.active:
                            break
                pick = self._pick()
                if pick is None:
                    if run.draining.is_set() or not self._room_for_claim() or not self._claim():
                        run.wake.wait(self.config.poll_secs if not run.draining.is_set() else 0.05)
                        run.wake.clear()
                    continue
                self._schedule(*pick)
        except Exception as exc:
            log.exception("feeder crashed; returning held jobs")
            run.crash("feeder", exc)
            ledger.return_all()
            deadline = time.monotonic() + CRASH_SETTLE_SECS
            while ledger.active_ids() and time.monotonic() < deadline:
                time.sleep(0.05)
            ledger.abandon_all()
        finally:
            connection.close()
            on_exit()

    def _pick(self) -> tuple[ActiveJob, int] | None:
        with self.ledger.lock:
            for job in sorted(self.ledger.active.values(), key=lambda j: (-j.priority, j.seq)):
                index = job.next_partition()
                if index is not None:
                    return job, index
        return None

    def _room_for_claim(self) -> bool:
        """Claim only while fewer partitions wait for a worker than about two per worker and the
        partitions held in every stage are within `_held_cap`. The device part can be far faster
        than the CPU tail (on an H200 a partition's GPU stage took 44 ms, its finalize much longer):
        counting the GPU queue alone let an engine claim 86 jobs whose partitions all waited for
        the finalizer, each job's latency growing while other engines could have proved them."""
        with self.ledger.lock:
            waiting = self.work.qsize() + self._inflight
            # a held job counts at least once: one finishing (its bundle stored by the history thread) too
            held = sum(max(job.outstanding, 1) for job in self.ledger.active.values())
        return waiting < 2 * self._workers and held < self._held_cap

    def _claim(self) -> bool:
        cfg, ledger = self.config, self.ledger
        try:
            row = queue.claim_next(cfg.engine_id, cfg.lease_secs)
        except Exception:  # a database hiccup delays claims, it must not stop the engine
            log.exception("claim failed; retrying")
            connection.close()
            return False
        if row is None:
            return False
        problem = row_problem(row.proof_kind, row.job_id, row.priority)
        if problem is not None:
            self._refuse(row, problem)
            return True  # the claim was used: look for the next job at once
        kind = PROOF_KINDS.get(row.proof_kind)
        if kind is None:  # a registered circom circuit's job
            try:
                if self._circuits is None:
                    raise CircuitUnavailable(f"this engine proves no circuits (kind {row.proof_kind!r})")
                kind = self._circuits.claimed(row)
            except CircuitUnavailable as exc:
                self._refuse(row, str(exc))
                return True
        with ledger.lock:
            if row.job_id in ledger.active:  # our own stale claim is still settling: let it go first
                queue.return_job(row.pk, cfg.engine_id)
                return False
            job = ActiveJob(row.pk, row.job_id, kind.name, row.priority, next(self._claims), kind.partitions,
                            attempt=row.attempts)
            ledger.active[row.job_id] = job
            ledger.tracker.register_job(job.job_id, job.kind, job.total)
        log.debug("claimed %s (%s, attempt %d)", row.job_id, row.proof_kind, row.attempts)
        return True

    def _refuse(self, row: Any, problem: str) -> None:
        """A claimed row the engine cannot prove (stored around the entry points): it fails with the
        reason, and the engine goes on with the next job."""
        reason = f"cannot be proved: {problem}"
        log.warning("job %r (kind %r): %s", row.job_id, row.proof_kind, reason)
        queue.fail_job(row.pk, self.config.engine_id, reason)
        self.ledger.announce(JobEvent(str(row.job_id), str(row.proof_kind), False, 0.0, reason))

    def _schedule(self, job: ActiveJob, index: int) -> None:
        ledger, budget = self.ledger, self.ledger.budget
        nbytes = self._part_bytes[job.kind]
        if not self._slots.acquire(timeout=0.2):
            return
        if not budget.acquire(nbytes, timeout=0.2):
            self._slots.release()
            return
        with ledger.lock:
            if job.next_partition() != index:
                budget.release(nbytes)
                self._slots.release()
                return
            job.take(index)
            self._inflight += 1
            ledger.tracker.partition_synth_start(job.job_id, index)
        work = Work(job, index, nbytes)
        work.synth_started = time.time()
        try:
            if job.kind in PROOF_KINDS:
                future = self.pool.submit(self._synthesize, job.kind, job.job_id, index, self.config.scale)
            else:
                assert self._circuits is not None  # a circuit's job is only claimed through it
                fn, args = self._circuits.task(job.job_id, index)
                future = self.pool.submit(fn, *args)
        except (BrokenProcessPool, KeyError, OSError) as exc:
            self._synth_finished(work, exc)
            return
        future.add_done_callback(functools.partial(self._synth_finished, work))

    def _synth_finished(self, work: Work, result: Future[Any] | BaseException) -> None:
        ledger = self.ledger
        work.synth_ended = time.time()
        self._slots.release()
        try:
            if isinstance(result, BaseException):
                raise result
            witness = result.result()
        except BaseException as exc:  # noqa: BLE001 - every failure must settle the partition
            with ledger.lock:
                self._inflight -= 1
                ledger.partition_error(work, "synthesis", exc)
            return
        job = work.job
        with ledger.lock:
            self._inflight -= 1
            ledger.tracker.partition_synth_end(job.job_id, work.index)
            if ledger.settle_if_stopped(work):
                return
            work.witness, work.synth_ms = witness, float(witness.synth_ms)
            self.work.put(work)
