"""The history writer: one thread that does the engine's database writes off the proving path.

GPU workers and finalizers never wait for the database; they hand a small closure here (and the
heartbeat its hourly prune, in batches: the heartbeat's own thread renews leases). One
writer keeps SQLite from seeing several writers at once and keeps the writes in order, so a
job's PartitionRun rows are stored before the job is marked done.
"""
from __future__ import annotations

import logging
import queue
import threading
from typing import Any, Callable

from django.db import connection, transaction

from gpu_engine import history_rollup, tallies
from gpu_engine.models import PartitionRun, PartitionState

log = logging.getLogger(__name__)

_STOP = object()


def phase_observations(runs: list[PartitionRun]) -> list[tuple[str, str, str, float]]:
    """The phase durations (seconds) of the proven partitions among `runs`, for the histograms."""
    out = []
    for run in runs:
        if run.state != PartitionState.DONE:
            continue
        for phase, ms in ((tallies.PHASE_SYNTHESIS, run.synth_ms), (tallies.PHASE_GPU, run.gpu_ms),
                          (tallies.PHASE_FINALIZE, run.finalize_ms)):
            if ms is not None:
                out.append((run.engine_id, run.proof_kind, phase, ms / 1000.0))
    return out


class HistoryWriter:
    def __init__(self, name: str = "history-writer",
                 on_crash: Callable[[str, BaseException], None] | None = None) -> None:
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._guarded_run, name=name, daemon=True)
        self._on_crash = on_crash
        self._pending_runs: list[PartitionRun] = []
        self.errors = 0

    def start(self) -> None:
        self._thread.start()

    def submit(self, op: Callable[[], object]) -> None:
        """Run `op` in the writer thread, after everything submitted before it."""
        self._queue.put(op)

    def submit_steps(self, step: Callable[[], bool]) -> None:
        """Run `step` in the writer thread until it returns False, one call at a time, each queued
        behind what was submitted meanwhile: housekeeping (the hourly prune) in short transactions
        that never hold results back for long, off the heartbeat that renews leases."""
        def run_step() -> None:
            if step():
                self._queue.put(run_step)

        self._queue.put(run_step)

    def record_partition(self, **fields: Any) -> None:
        """Queue one PartitionRun row (batched with its neighbours into one INSERT)."""
        self._queue.put(PartitionRun(**fields))

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued write is done; False on timeout."""
        done = threading.Event()
        self._queue.put(done.set)
        return done.wait(timeout)

    def stop(self, timeout: float | None = 30.0) -> None:
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout)

    def _guarded_run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # a dead writer must stop the engine, not hide
            log.critical("the history writer crashed", exc_info=True)
            if self._on_crash is not None:
                self._on_crash(self._thread.name, exc)

    def _run(self) -> None:
        try:
            while True:
                item = self._queue.get()
                batch = [item]
                while isinstance(batch[-1], PartitionRun):
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                runs = [x for x in batch if isinstance(x, PartitionRun)]
                rest = [x for x in batch if not isinstance(x, PartitionRun)]
                if runs:
                    self._write_runs(runs)
                for op in rest:
                    if op is _STOP:
                        return
                    self._call(op)
        finally:
            connection.close()

    def _write_runs(self, runs: list[PartitionRun]) -> None:
        try:
            with transaction.atomic():
                PartitionRun.objects.bulk_create(runs)
                tallies.record_durations(phase_observations(runs))
                history_rollup.record_runs(runs)  # the 24 h / 7 d charts' latency histograms
        except Exception:
            self.errors += 1
            log.exception("could not store %d partition run(s)", len(runs))
            connection.close()  # the next write reconnects

    def _call(self, op: Callable[[], None]) -> None:
        try:
            op()
        except Exception:
            self.errors += 1
            log.exception("history write failed")
            connection.close()
