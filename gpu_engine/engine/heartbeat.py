"""The heartbeat: renews this engine's leases and notices jobs cancelled or lost meanwhile.

It is also the engine's only periodic database reader: it requeues other engines' expired leases
and refreshes the queue depth the tracker shows; and it writes the one-minute telemetry rollups
(engine/rollup.py). Their hourly prune is only scheduled here: it runs on the history writer in short
batches, because nothing slow may share this thread with the lease renewals.
"""
from __future__ import annotations

import logging
import threading

from django.db import connection
from django.utils import timezone

from gpu_engine import queue
from gpu_engine.engine.config import EngineConfig
from gpu_engine.engine.ledger import Ledger
from gpu_engine.engine.rollup import RollupWriter
from gpu_engine.engine.state import STOP_CANCELLED, STOP_LOST
from gpu_engine.models import EngineHost, JobStatus, ProofJob

log = logging.getLogger("gpu_engine.engine")


class Heartbeat:
    def __init__(self, config: EngineConfig, ledger: Ledger, rollups: RollupWriter | None = None) -> None:
        self.config, self.ledger, self.rollups = config, ledger, rollups
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()

    def run_loop(self) -> None:
        try:
            while not self._stop.wait(self.config.heartbeat_secs):
                try:
                    self.beat()
                except Exception:  # a database hiccup must not stop renewals
                    log.exception("heartbeat failed")
                    connection.close()
        finally:
            if self.rollups is not None:
                self.rollups.close()
            connection.close()

    def beat(self) -> None:
        cfg, ledger = self.config, self.ledger
        with ledger.lock:
            held = {job.pk: job for job in ledger.active.values()}
        # Finishing jobs are renewed too: the lease must outlive the write of their result.
        for pk in queue.renew_leases(cfg.engine_id, held, cfg.lease_secs):
            job = held[pk]
            if job.finishing:
                continue
            status = ProofJob.objects.filter(pk=pk).values_list("status", flat=True).first()
            if status == JobStatus.CANCELLED:
                ledger.stop_job(job, STOP_CANCELLED, "cancelled")
            else:
                ledger.stop_job(job, STOP_LOST, f"lease lost (job is {status or 'gone'})")
        EngineHost.objects.filter(engine_id=cfg.engine_id).update(last_heartbeat=timezone.now())
        queue.requeue_expired()
        depth = queue.queue_depth()
        ledger.tracker.set_queue_depth(depth)
        if self.rollups is not None:
            budget = ledger.budget
            self.rollups.beat(depth, budget.used_bytes, budget.total_bytes)
        if depth:
            ledger.run.wake.set()
