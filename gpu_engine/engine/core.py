"""The engine: wires its parts together and owns their lifecycle (start, drain, shutdown).

Who owns what (docs/THREADS.md has the full table):
* `Feeder` (thread "feeder"): claims, memory-budget reservations, the synthesis pool;
* `GpuWorker` (threads "worker-N"): the device part, each with its own backend;
* `Finalizers` (threads "finalizer_N"): the CPU tail and verification of every partition;
* `Prover` + `ProvingPool`: where the two halves of a proof run (pool children with the CPU backend);
* `Ledger`: the held jobs and the one settlement of every partition, under one lock;
* `HistoryWriter` (thread "history-writer"): every database write of results, in order;
* `Heartbeat` (thread "heartbeat"): leases, cancellations, expired claims, queue depth;
* `TelemetryPoller`: GPU telemetry for the snapshot.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Any, Callable

from django.utils import timezone

from gpu_engine import queue
from gpu_engine.budget import MemoryBudget
from gpu_engine.circom.housekeeping import housekeep_quietly
from gpu_engine.engine.circuits import CircuitKinds
from gpu_engine.engine.config import EngineConfig
from gpu_engine.engine.feeder import Feeder
from gpu_engine.engine.heartbeat import Heartbeat
from gpu_engine.engine.history import HistoryWriter
from gpu_engine.engine.ledger import Ledger
from gpu_engine.engine.proving import ParamsRef, ProvingPool, default_size
from gpu_engine.engine.rollup import MinuteRollup, RollupWriter
from gpu_engine.engine.state import ActiveJob, JobEvent, RunState, WorkQueue, guarded
from gpu_engine.engine.stats import EngineStats
from gpu_engine.engine.telemetry import TelemetryPoller
from gpu_engine.engine.workers import Finalizers, GpuWorker, Prover
from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.models import EngineHost
from gpu_engine.tracker import StatusTracker

log = logging.getLogger("gpu_engine.engine")


class Engine:
    def __init__(self, config: EngineConfig, tracker: StatusTracker | None = None) -> None:
        from gpu_engine.groth16 import api as g16  # pure, but heavy: loaded with the engine, not the app

        self.g16 = g16
        self.config = config
        self.budget = MemoryBudget(config.memory_budget)
        self.tracker = tracker or StatusTracker(budget=self.budget, synth_max=config.synth_workers,
                                                backend=config.backend, grace_secs=config.grace_secs)
        self.stats = EngineStats()
        self.run = RunState()
        self.history = HistoryWriter(on_crash=self.run.crash)
        self.params: dict[str, Any] = {}
        self.part_bytes: dict[str, int] = {}
        self.workers = config.worker_ids()
        self.ledger = Ledger(config, self.tracker, self.budget, self.history, self.stats, self.run,
                             self._make_bundle)
        self.work = WorkQueue()
        self.proving_pool: ProvingPool | None = None
        self.feeder: Feeder | None = None
        self._finalizers: Finalizers | None = None
        self.rollup = MinuteRollup(config.engine_id)
        self._heartbeat = Heartbeat(config, self.ledger, RollupWriter(self.rollup, schedule=self.history.submit_steps))
        self._telemetry: TelemetryPoller | None = None
        self._threads: list[threading.Thread] = []

    # ---- lifecycle ----------------------------------------------------------------------

    def prepare(self, progress: Callable[..., None] | None = None) -> None:
        """Load the parameters of every kind (generated only on a first start, see trusted_setup.py);
        check a partition fits the budget. ParamsUnavailable names an unusable or missing file."""
        from gpu_engine.trusted_setup import prepare_params

        for kind in PROOF_KINDS:
            if kind in self.params:
                continue
            cb = (lambda *a, _k=kind, **kw: progress(_k, *a, **kw)) if progress else None
            params = prepare_params(kind, self.config.params_dir, self.config.scale, progress=cb)
            nbytes = int(self.g16.partition_bytes(params))
            if nbytes > self.budget.total_bytes:
                raise ValueError(f"one {kind} partition needs {nbytes} bytes but the memory budget is "
                                 f"{self.budget.total_bytes}; raise --memory-budget")
            self.params[kind], self.part_bytes[kind] = params, nbytes

    def add_listener(self, callback: Callable[[JobEvent], None]) -> None:
        self.ledger.listeners.append(callback)

    def start(self) -> None:
        self.prepare()
        cfg = self.config
        self._register_host()
        requeued, failed = queue.requeue_expired()
        orphans, orphans_failed = queue.requeue_orphans(cfg.engine_id)
        if requeued or failed or orphans or orphans_failed:
            log.info("startup: expired leases: %d requeued, %d failed; left by a previous %s: %d requeued, "
                     "%d failed", requeued, failed, cfg.engine_id, orphans, orphans_failed)
        housekeep_quietly()  # what a killed registration or submit left, and expired circuit job items
        self.tracker.set_backend(cfg.backend)
        self.tracker.register_workers(self.workers)
        refs: dict[str, Any] = {kind: ParamsRef.of(kind, cfg.scale, cfg.params_dir) for kind in self.params}
        if self.proving_processes:
            self.proving_pool = ProvingPool(self.proving_processes, list(refs.values()))
            self.proving_pool.start()
        prover = Prover(self.g16, self.params, refs, self.proving_pool, self.stats)
        self._finalizers = Finalizers(cfg.finalizers, self.ledger, prover, cfg.finalize_delay_secs)
        # Registered circuits join `params`, `refs` and `part_bytes` when their first job is claimed.
        circuits = CircuitKinds(self.params, refs, self.part_bytes, self.budget.total_bytes)
        self.ledger.listeners.append(lambda event: circuits.forget(event.job_id))
        feeder = self.feeder = Feeder(cfg, self.ledger, self.work, self.run, self.g16.synthesize_partition,
                                      self.part_bytes, len(self.workers), circuits)
        self.history.start()
        # GPU telemetry for the snapshot's `gpus` (about once a second; a no-op without NVML).
        self._telemetry = TelemetryPoller(self._publish_gpus)
        self._telemetry.start()
        spawn: list[tuple[Callable[[], None], str]] = [
            (lambda: feeder.run_loop(on_exit=self._shutdown), "feeder"),
            (self._heartbeat.run_loop, "heartbeat"),
        ]
        for wid, ordinal in self.workers:
            worker = GpuWorker(wid, ordinal, cfg.backend, self.ledger, self.work, prover, self._finalizers, self.run)
            spawn.append((worker.run_loop, f"worker-{wid}"))
        for target, name in spawn:
            thread = threading.Thread(target=guarded(self.run, name, target), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def request_stop(self, drain_secs: float | None = None) -> None:
        """Stop claiming; finish held jobs for up to `drain_secs`, then return the rest to the queue."""
        self.run.request_stop(self.config.drain_secs if drain_secs is None else drain_secs)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the engine has shut down completely (True) or `timeout` passes."""
        return self.run.stopped.wait(timeout)

    def stop(self, drain_secs: float | None = None, timeout: float | None = 120.0) -> bool:
        self.request_stop(drain_secs)
        return self.wait(timeout)

    @property
    def fatal_error(self) -> str | None:
        """The first unexpected crash of an engine thread (the engine stopped because of it), or None."""
        return self.run.fatal

    @property
    def proving_processes(self) -> int:
        """Size of the proving process pool (0: proving runs in the engine's threads)."""
        cfg = self.config
        if cfg.proving_processes is not None:
            return cfg.proving_processes
        return default_size(cfg.backend, len(self.workers), cfg.finalizers)

    @property
    def active_jobs(self) -> list[str]:
        return self.ledger.active_ids()

    def _publish_gpus(self, gpus: list[dict[str, Any]]) -> None:
        """A telemetry reading: to the snapshot, and into this minute's rollup."""
        self.tracker.set_gpus(gpus)
        self.rollup.add_gpus(gpus)

    def _make_bundle(self, job: ActiveJob, proofs: list[Any]) -> dict[str, Any]:
        return self.g16.make_bundle(job.kind, job.job_id, self.params[job.kind].vk, proofs)

    def _register_host(self) -> None:
        now = timezone.now()
        EngineHost.objects.update_or_create(
            engine_id=self.config.engine_id,
            defaults={"hostname": socket.gethostname(), "backend": self.config.backend, "workers": len(self.workers),
                      "pid": os.getpid(), "started_at": now, "last_heartbeat": now, "stopped_at": None},
        )

    def _shutdown(self) -> None:
        """The feeder's last act: stop workers, finalizers and pools, then the history writer.
        `stopped` is set however this ends: `runprover` waits on it."""
        try:
            self.work.stop_workers(len(self.workers))
            for thread in self._threads:
                if thread.name.startswith("worker-"):
                    thread.join()
            if self._finalizers is not None:
                self._finalizers.shutdown()
            if self.proving_pool is not None:
                self.proving_pool.shutdown()
            if self.feeder is not None:
                self.feeder.pool.shutdown()
            self._heartbeat.stop()
            if self._telemetry is not None:
                self._telemetry.stop()
            self.history.submit(lambda: EngineHost.objects.filter(engine_id=self.config.engine_id).update(
                stopped_at=timezone.now(), last_heartbeat=timezone.now()))
            self.history.stop()
            for thread in self._threads:
                if thread.name == "heartbeat":
                    thread.join()
        finally:
            self.run.stopped.set()
