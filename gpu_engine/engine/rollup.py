"""One-minute telemetry rollups: what the history charts show of GPUs and the queue, kept a week.

The telemetry poller hands every GPU reading here (about once a second) and the heartbeat adds the
queue depth and the memory budget; a minute is written as one `TelemetryMinute` row per GPU plus one
engine row once it is over (by the heartbeat, which also schedules the hourly prune past their retention). Raw
samples are never stored: a year of history is 7 days x 1,440 minutes x (GPUs + 1) rows at most.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from django.conf import settings

from gpu_engine import history_rollup
from gpu_engine.circom.housekeeping import housekeep_quietly
from gpu_engine.models import TelemetryMinute

log = logging.getLogger("gpu_engine.engine")
PRUNE_EVERY_SECS = 3600.0
# Rows deleted per prune transaction: a week of backlog is deleted in short steps, each releasing the
# database (SQLite's one writer lock) so the heartbeat's lease renewals never wait behind it.
PRUNE_BATCH = 5000


@dataclass
class _Acc:
    samples: int = 0
    util_sum: float = 0.0
    util_n: int = 0
    util_max: float | None = None
    mem_used: int | None = None
    mem_total: int | None = None
    queue_depth: int | None = None

    def add_gpu(self, gpu: dict[str, Any]) -> None:
        self.samples += 1
        util = gpu.get("util_pct")
        if isinstance(util, (int, float)):
            self.util_sum += float(util)
            self.util_n += 1
            self.util_max = float(util) if self.util_max is None else max(self.util_max, float(util))
        used, total = gpu.get("mem_used_bytes"), gpu.get("mem_total_bytes")
        if isinstance(used, int):
            self.mem_used = used if self.mem_used is None else max(self.mem_used, used)
        if isinstance(total, int):
            self.mem_total = total

    def add_engine(self, queue_depth: int, mem_used: int, mem_total: int) -> None:
        self.samples += 1
        self.queue_depth = queue_depth if self.queue_depth is None else max(self.queue_depth, queue_depth)
        self.mem_used = mem_used if self.mem_used is None else max(self.mem_used, mem_used)
        self.mem_total = mem_total


def minute_of(ts: float) -> datetime:
    return datetime.fromtimestamp(ts - ts % 60, tz=timezone.utc)


class MinuteRollup:
    """Accumulates samples per (minute, GPU); `take_finished()` hands over the minutes that are over."""

    def __init__(self, engine_id: str, clock: Callable[[], float] = time.time) -> None:
        self.engine_id, self.clock = engine_id, clock
        self._lock = threading.Lock()
        self._acc: dict[tuple[datetime, int], _Acc] = {}

    def add_gpus(self, gpus: list[dict[str, Any]]) -> None:
        """One telemetry reading (the snapshot's `gpus` list)."""
        minute = minute_of(self.clock())
        with self._lock:
            for gpu in gpus:
                ordinal = gpu.get("ordinal")
                if isinstance(ordinal, int) and ordinal >= 0:
                    self._acc.setdefault((minute, ordinal), _Acc()).add_gpu(gpu)

    def add_engine(self, queue_depth: int, mem_used: int, mem_total: int) -> None:
        minute = minute_of(self.clock())
        with self._lock:
            self._acc.setdefault((minute, TelemetryMinute.ENGINE_ROW), _Acc()).add_engine(
                queue_depth, mem_used, mem_total)

    def take_finished(self, *, everything: bool = False) -> list[TelemetryMinute]:
        """Rows of the minutes before the current one (all of them with `everything`, at shutdown)."""
        current = minute_of(self.clock())
        with self._lock:
            keys = [k for k in self._acc if everything or k[0] < current]
            accs = [(k, self._acc.pop(k)) for k in sorted(keys)]
        return [TelemetryMinute(
            engine_id=self.engine_id, minute=minute, gpu_ordinal=ordinal, samples=a.samples,
            util_pct=(a.util_sum / a.util_n) if a.util_n else None, util_max_pct=a.util_max,
            mem_used_bytes=a.mem_used, mem_total_bytes=a.mem_total, queue_depth=a.queue_depth,
        ) for (minute, ordinal), a in accs]


def store(rows: list[TelemetryMinute]) -> None:
    """Write finished minutes; a minute written before (an engine restarted within it) is replaced."""
    if rows:
        TelemetryMinute.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["engine_id", "minute", "gpu_ordinal"],
            update_fields=["samples", "util_pct", "util_max_pct", "mem_used_bytes", "mem_total_bytes", "queue_depth"])


def retention_days() -> float:
    return float(getattr(settings, "TELEMETRY_RETENTION_DAYS", 7.0))


def prune_cutoff(days: float | None = None, now: datetime | None = None) -> datetime:
    days = retention_days() if days is None else days
    return (now or datetime.now(timezone.utc)) - timedelta(days=days)


def prune_batch(cutoff: datetime, batch: int | None = None) -> int:
    """Delete at most `batch` (PRUNE_BATCH) rows before `cutoff` in one short transaction: telemetry
    minutes, then the history rollup's periods (gpu_engine/history_rollup.py, same retention); how many."""
    batch = PRUNE_BATCH if batch is None else batch
    ids = list(TelemetryMinute.objects.filter(minute__lt=cutoff).order_by().values_list("pk", flat=True)[:batch])
    if ids:
        TelemetryMinute.objects.filter(pk__in=ids).delete()
    if len(ids) < batch:
        return len(ids) + history_rollup.prune_batch(cutoff, batch - len(ids))
    return len(ids)


def prune(days: float | None = None, now: datetime | None = None) -> int:
    """Delete telemetry minutes older than `days` (default TELEMETRY_RETENTION_DAYS); returns how many."""
    cutoff = prune_cutoff(days, now)
    total = 0
    while n := prune_batch(cutoff):
        total += n
        if n < PRUNE_BATCH:
            break
    return total


class RollupWriter:
    """The heartbeat's part: store finished minutes every beat, prune once an hour.

    The prune is handed to `schedule` (the engine's history writer: `HistoryWriter.submit_steps`),
    one batch per step: the heartbeat renews leases, and a long prune on its thread would let them
    expire. Without `schedule` (tools, tests) it runs in place."""

    def __init__(self, rollup: MinuteRollup, clock: Callable[[], float] = time.monotonic,
                 schedule: Callable[[Callable[[], bool]], None] | None = None) -> None:
        self.rollup, self.clock, self.schedule = rollup, clock, schedule
        self._last_prune: float | None = None

    def beat(self, queue_depth: int, mem_used: int, mem_total: int) -> None:
        self.rollup.add_engine(queue_depth, mem_used, mem_total)
        store(self.rollup.take_finished())
        now = self.clock()
        if self._last_prune is None or now - self._last_prune >= PRUNE_EVERY_SECS:
            self._last_prune = now
            if self.schedule is None:
                self._log_pruned(prune())
                housekeep_quietly()  # circuit files past their use (gpu_engine/circom/housekeeping.py)
            else:
                self.schedule(self._prune_steps(prune_cutoff()))

    def _prune_steps(self, cutoff: datetime) -> Callable[[], bool]:
        """The prune in batches, then the circuit housekeeping: steps for the history writer, so a long
        prune never holds the heartbeat (which renews the leases)."""
        deleted = [0]

        def step() -> bool:
            n = prune_batch(cutoff)
            deleted[0] += n
            if n < PRUNE_BATCH:
                self._log_pruned(deleted[0])
                housekeep_quietly()
                return False
            return True

        return step

    @staticmethod
    def _log_pruned(n: int) -> None:
        if n:
            log.info("pruned %d telemetry minute(s) and history rollup row(s) older than %s days", n, retention_days())

    def close(self) -> None:
        try:
            store(self.rollup.take_finished(everything=True))
        except Exception:  # the last partial minute is not worth failing a shutdown for
            log.exception("could not store the last telemetry minute")
