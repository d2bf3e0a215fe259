"""The engine: durable queue -> synthesis (process pool) -> GPU workers -> finalizers -> assembler.

Threads and what they own:
* the feeder claims jobs (only when the pipeline has room, so an engine never hoards leases),
  reserves memory-budget bytes per partition and submits synthesis to a process pool;
* GPU workers (threads, several per device) each create their backend inside themselves, run the
  device part and hand the CPU tail to the finalizer pool at once (split proving);
* finalizers finish and verify each partition; with the CPU backend the device part and the
  finalize step run in the proving process pool (proving_pool.py), so the GIL-holding MSMs and
  NTTs never stall the web server sharing this process (CUDA: only the finalize step goes there); the history writer stores runs, bundles and
  outcomes, so no proving thread waits on the database;
* the heartbeat renews leases, notices cancelled or lost jobs and requeues expired leases.

The tracker is told every transition, and every path of a partition ends in exactly one
settlement (done, retried, or failed) that returns its budget bytes.
"""
from __future__ import annotations

import itertools
import logging
import multiprocessing
import os
import queue as stdqueue
import socket
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable

from django.db import connection
from django.utils import timezone

from gpu_engine import backends, queue
from gpu_engine.budget import MemoryBudget
from gpu_engine.engine_pipeline import PipelineMixin
from gpu_engine.engine_types import ActiveJob, EngineConfig, EngineStats, JobEvent, Work
from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.history import HistoryWriter
from gpu_engine.models import EngineHost, PartitionState
from gpu_engine.proving_pool import ParamsRef, ProvingPool, child_init, default_size
from gpu_engine.tracker import StatusTracker
from gpu_engine.telemetry import TelemetryPoller

log = logging.getLogger(__name__)


class ProofError(RuntimeError):
    """A partition proof that does not verify."""


def _device_error_types() -> tuple[type[BaseException], ...]:
    for module in (backends, getattr(backends, "base", None)):
        err = getattr(module, "DeviceError", None)
        if isinstance(err, type):
            return (err,)
    return ()


class Engine(PipelineMixin):
    _STOP_ITEM = object()

    def __init__(self, config: EngineConfig, tracker: StatusTracker | None = None) -> None:
        from gpu_engine.groth16 import api as g16

        self.g16 = g16
        self.config = config
        self.budget = MemoryBudget(config.memory_budget)
        self.tracker = tracker or StatusTracker(budget=self.budget, synth_max=config.synth_workers,
                                                backend=config.backend, grace_secs=config.grace_secs)
        self.stats = EngineStats()
        self.history = HistoryWriter()
        self.params: dict[str, Any] = {}
        self.part_bytes: dict[str, int] = {}
        self._lock = threading.RLock()
        self._active: dict[str, ActiveJob] = {}
        self._gpu_q: stdqueue.PriorityQueue = stdqueue.PriorityQueue()
        self._order = itertools.count()
        self._claims = itertools.count()
        self._synth_slots = threading.Semaphore(config.synth_workers)
        self._synth_inflight = 0
        self._wake = threading.Event()
        self._draining = threading.Event()
        self._drain_deadline = float("inf")
        self._hb_stop = threading.Event()
        self._stopped = threading.Event()
        self._listeners: list[Callable[[JobEvent], None]] = []
        self._threads: list[threading.Thread] = []
        self._pool: ProcessPoolExecutor | None = None
        self._finalizer: ThreadPoolExecutor | None = None
        self._cpu = None
        self._proving: ProvingPool | None = None
        self._params_refs: dict[str, ParamsRef] = {}
        self._telemetry = None
        self._device_errors = _device_error_types()
        self.workers = config.worker_ids()

    # ---- lifecycle ----------------------------------------------------------------------

    def prepare(self, progress: Callable[..., None] | None = None) -> None:
        """Load (or generate once) the parameters of every kind; check a partition fits the budget."""
        for kind in PROOF_KINDS:
            if kind in self.params:
                continue
            cb = (lambda *a, _k=kind, **kw: progress(_k, *a, **kw)) if progress else None
            params = self.g16.load_params(kind, self.config.params_dir, scale=self.config.scale, progress=cb)
            nbytes = int(self.g16.partition_bytes(params))
            if nbytes > self.budget.total_bytes:
                raise ValueError(f"one {kind} partition needs {nbytes} bytes but the memory budget is "
                                 f"{self.budget.total_bytes}; raise --memory-budget")
            self.params[kind], self.part_bytes[kind] = params, nbytes

    def add_listener(self, callback: Callable[[JobEvent], None]) -> None:
        self._listeners.append(callback)

    def start(self) -> None:
        self.prepare()
        cfg = self.config
        self._register_host()
        requeued, failed = queue.requeue_expired()
        orphans, orphans_failed = queue.requeue_orphans(cfg.engine_id)
        if requeued or failed or orphans or orphans_failed:
            log.info("startup: expired leases: %d requeued, %d failed; left by a previous %s: %d requeued, "
                     "%d failed", requeued, failed, cfg.engine_id, orphans, orphans_failed)
        self._cpu = backends.create_backend("cpu")
        self.tracker.set_backend(cfg.backend)
        self.tracker.register_workers(self.workers)
        self._pool = self._new_pool()
        self._finalizer = ThreadPoolExecutor(cfg.finalizers, thread_name_prefix="finalizer")
        self._params_refs = {kind: ParamsRef.of(kind, cfg.scale, cfg.params_dir) for kind in self.params}
        if self.proving_processes:
            self._proving = ProvingPool(self.proving_processes, self._params_refs.values())
            self._proving.start()
        self.history.start()
        # GPU telemetry for the snapshot's `gpus` (about once a second; a no-op without NVML).
        self._telemetry = TelemetryPoller(self.tracker.set_gpus)
        self._telemetry.start()
        spawn = [(self._feed_loop, "feeder"), (self._heartbeat_loop, "heartbeat")]
        spawn += [(lambda w=wid, g=ordinal: self._worker_loop(w, g), f"worker-{wid}") for wid, ordinal in self.workers]
        for target, name in spawn:
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def request_stop(self, drain_secs: float | None = None) -> None:
        """Stop claiming; finish held jobs for up to `drain_secs`, then return the rest to the queue."""
        drain = self.config.drain_secs if drain_secs is None else drain_secs
        self._drain_deadline = min(self._drain_deadline, time.monotonic() + drain)
        self._draining.set()
        self._wake.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the engine has shut down completely (True) or `timeout` passes."""
        return self._stopped.wait(timeout)

    def stop(self, drain_secs: float | None = None, timeout: float | None = 120.0) -> bool:
        self.request_stop(drain_secs)
        return self.wait(timeout)

    @property
    def proving_processes(self) -> int:
        """Size of the proving process pool (0: proving runs in the engine's threads)."""
        cfg = self.config
        if cfg.proving_processes is not None:
            return cfg.proving_processes
        return default_size(cfg.backend, len(self.workers), cfg.finalizers)

    @property
    def active_jobs(self) -> list[str]:
        with self._lock:
            return list(self._active)

    def _new_pool(self) -> ProcessPoolExecutor:
        # Not fork: the parent holds Django, threads and locks a forked child would inherit mid-use.
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["gpu_engine.groth16.api", "gpu_engine.backends.cpu", "gpu_engine.proving_pool"])
        # child_init: a Ctrl-C to the process group must not kill synthesis mid-drain, and the
        # children must not outlive this process.
        return ProcessPoolExecutor(self.config.synth_workers, mp_context=ctx, initializer=child_init,
                                   initargs=(os.getpid(),))

    def _register_host(self) -> None:
        now = timezone.now()
        EngineHost.objects.update_or_create(
            engine_id=self.config.engine_id,
            defaults={"hostname": socket.gethostname(), "backend": self.config.backend, "workers": len(self.workers),
                      "pid": os.getpid(), "started_at": now, "last_heartbeat": now, "stopped_at": None},
        )

    def _shutdown(self) -> None:
        for _ in self.workers:
            self._gpu_q.put(((float("inf"), next(self._order)), self._STOP_ITEM))
        for thread in self._threads:
            if thread.name.startswith("worker-"):
                thread.join()
        self._finalizer.shutdown(wait=True)
        if self._proving is not None:
            self._proving.shutdown()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._hb_stop.set()
        if self._telemetry is not None:
            self._telemetry.stop()
        self.history.submit(lambda: EngineHost.objects.filter(engine_id=self.config.engine_id).update(
            stopped_at=timezone.now(), last_heartbeat=timezone.now()))
        self.history.stop()
        for thread in self._threads:
            if thread.name == "heartbeat":
                thread.join()
        self._stopped.set()

    # ---- feeder: claims and scheduling ---------------------------------------------------

    def _feed_loop(self) -> None:
        try:
            while True:
                if self._draining.is_set():
                    if time.monotonic() >= self._drain_deadline:
                        self._return_all()
                    with self._lock:
                        if not self._active:
                            break
                pick = self._pick()
                if pick is None:
                    if self._draining.is_set() or not self._room_for_claim() or not self._claim():
                        self._wake.wait(self.config.poll_secs if not self._draining.is_set() else 0.05)
                        self._wake.clear()
                    continue
                self._schedule(*pick)
        except Exception:
            log.exception("feeder crashed; returning held jobs")
            self._return_all()
        finally:
            connection.close()
            self._shutdown()

    def _pick(self) -> tuple[ActiveJob, int] | None:
        with self._lock:
            for job in sorted(self._active.values(), key=lambda j: (-j.priority, j.seq)):
                index = job.next_partition()
                if index is not None:
                    return job, index
        return None

    def _room_for_claim(self) -> bool:
        """Claim only while fewer partitions wait for a worker than about two per worker."""
        with self._lock:
            waiting = self._gpu_q.qsize() + self._synth_inflight
        return waiting < 2 * len(self.workers)

    def _claim(self) -> bool:
        try:
            row = queue.claim_next(self.config.engine_id, self.config.lease_secs)
        except Exception:  # noqa: BLE001 - a database hiccup delays claims, it must not stop the engine
            log.exception("claim failed; retrying")
            connection.close()
            return False
        if row is None:
            return False
        kind = PROOF_KINDS[row.proof_kind]
        with self._lock:
            if row.job_id in self._active:  # our own stale claim is still settling: let it go first
                queue.return_job(row.pk, self.config.engine_id)
                return False
            job = ActiveJob(row.pk, row.job_id, kind.name, row.priority, next(self._claims), kind.partitions)
            self._active[row.job_id] = job
            self.tracker.register_job(job.job_id, job.kind, job.total)
        log.debug("claimed %s (%s, attempt %d)", row.job_id, row.proof_kind, row.attempts)
        return True

    def _schedule(self, job: ActiveJob, index: int) -> None:
        nbytes = self.part_bytes[job.kind]
        if not self._synth_slots.acquire(timeout=0.2):
            return
        if not self.budget.acquire(nbytes, timeout=0.2):
            self._synth_slots.release()
            return
        with self._lock:
            if job.next_partition() != index:
                self.budget.release(nbytes)
                self._synth_slots.release()
                return
            job.take(index)
            self._synth_inflight += 1
            self.tracker.partition_synth_start(job.job_id, index)
        work = Work(job, index, nbytes)
        try:
            future = self._pool.submit(self.g16.synthesize_partition, job.kind, job.job_id, index, self.config.scale)
        except BrokenProcessPool as exc:
            self._pool = self._new_pool()
            self._synth_finished(work, exc)
            return
        future.add_done_callback(lambda f, w=work: self._synth_finished(w, f))

    def _synth_finished(self, work: Work, result: Future | BaseException) -> None:
        self._synth_slots.release()
        try:
            if isinstance(result, BaseException):
                raise result
            witness = result.result()
        except BrokenProcessPool as exc:
            self._pool_broken(exc)
            self._partition_error(work, "synthesis", exc, synthesizing=True)
            return
        except BaseException as exc:  # noqa: BLE001 - every failure must settle the partition
            self._partition_error(work, "synthesis", exc, synthesizing=True)
            return
        job = work.job
        with self._lock:
            self._synth_inflight -= 1
            self.tracker.partition_synth_end(job.job_id, work.index)
            if job.stop is not None:
                self._settle(work, PartitionState.CANCELLED, job.stop[1], tracker_fail=True)
                return
            work.witness, work.synth_ms = witness, float(witness.synth_ms)
            self._enqueue(work)

    def _enqueue(self, work: Work) -> None:
        """Hand a synthesized partition to the GPU workers: higher priority, older claim, lower index first."""
        job = work.job
        self._gpu_q.put(((-job.priority, job.seq, work.index, next(self._order)), work))

    def _pool_broken(self, exc: BaseException) -> None:
        with self._lock:
            pool = self._pool
            if pool is not None and getattr(pool, "_broken", False):
                log.error("synthesis pool broke (%s); starting a new one", exc)
                self._pool = self._new_pool()
