"""History aggregated in the database: as many numbers as the charts have pixels, whatever the rate.

A busy engine settles 10^5 partitions an hour. Reading every run into Python to draw one rectangle
each made the panel's activity region megabytes and seconds; here the database groups the runs of a
window into fixed time buckets per lane (GROUP BY on the window index) and the timeline draws one
rectangle per busy bucket: a lane has at most BUCKETS of them. Latency percentiles come from a
logarithmic histogram grouped the same way (within LOG_STEPS_PER_E of exact); throughput from a count
per minute and kind. Small windows keep their exact rows (`timeline`, `charts` decide by a count).

Times are compared as unix seconds computed in SQL: `EXTRACT(EPOCH ...)` on PostgreSQL, `strftime`
and the stored fraction on SQLite (which stores datetimes as ISO text; Django registers LN and FLOOR there).
"""
from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from django.db import connection

from gpu_engine import history_rollup
from gpu_engine.models import PartitionRun

BUCKETS = 300                  # rectangles per lane at most (a panel lane is a few hundred pixels wide)
LOG_STEPS_PER_E = history_rollup.STEPS_PER_E  # latency histogram resolution: the rollup's buckets
FAILED_STATES = ("failed", "retried", "cancelled")


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, timezone.utc)


def table(model: Any) -> str:
    """The model's table name, quoted for raw SQL."""
    return connection.ops.quote_name(model._meta.db_table)  # noqa: SLF001 - Django's documented Options API


def runs_since(engine_id: str, since: float) -> int:
    """How many runs this engine settled since `since` (one indexed count)."""
    return PartitionRun.objects.filter(engine_id=engine_id, ended_at__gte=_dt(since)).order_by().count()


def lane_buckets(engine_id: str, start: float, end: float, buckets: int = BUCKETS) -> list[dict[str, Any]]:
    """Per lane ("gpu" phase by worker, "finalize" as one lane) and time bucket of [start, end): the
    runs started there, how many failed, their busy seconds, first start and last end.

    One pass over the window's rows, grouped by worker and the bucket of the run's GPU start (its
    finalize start where it had no GPU phase); the finalize lane adds up the workers' groups."""
    width = (end - start) / buckets
    gs, ge = history_rollup.epoch("gpu_started_at"), history_rollup.epoch("gpu_ended_at")
    fs, fe = history_rollup.epoch("finalize_started_at"), history_rollup.epoch("finalize_ended_at")
    failed = f"state IN ({', '.join(['%s'] * len(FAILED_STATES))})"
    sql = (f"SELECT worker_id, FLOOR((COALESCE({gs}, {fs}) - %s) / %s), "
           f"SUM(CASE WHEN gpu_started_at IS NOT NULL AND gpu_ended_at IS NOT NULL THEN 1 ELSE 0 END), "
           f"SUM(CASE WHEN {failed} AND gpu_ended_at IS NOT NULL THEN 1 ELSE 0 END), "
           f"SUM({ge} - {gs}), MIN({gs}), MAX({ge}), "
           f"SUM(CASE WHEN finalize_started_at IS NOT NULL AND finalize_ended_at IS NOT NULL THEN 1 ELSE 0 END), "
           f"SUM(CASE WHEN {failed} AND finalize_ended_at IS NOT NULL THEN 1 ELSE 0 END), "
           f"SUM({fe} - {fs}), MIN({fs}), MAX({fe}) "
           f"FROM {table(PartitionRun)} WHERE engine_id = %s AND ended_at >= %s "
           "AND (gpu_started_at IS NOT NULL OR finalize_started_at IS NOT NULL) GROUP BY 1, 2")
    params: list[Any] = [start, width, *FAILED_STATES, *FAILED_STATES, engine_id, _dt(start)]
    lanes: dict[tuple[str, str, int], dict[str, Any]] = {}

    def add(phase: str, worker: str, b: int, n: Any, failed: Any, busy: Any, first: Any, last: Any) -> None:
        acc = lanes.setdefault((phase, worker, b), {
            "phase": phase, "worker": worker, "bucket": b, "start": start + b * width, "end": start + (b + 1) * width,
            "count": 0, "failed": 0, "busy": 0.0, "first": float(first), "last": float(last)})
        acc["count"] += int(n)
        acc["failed"] += int(failed or 0)
        acc["busy"] += float(busy or 0.0)
        acc["first"], acc["last"] = min(acc["first"], float(first)), max(acc["last"], float(last))

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    for worker, b, g_n, g_failed, g_busy, g_first, g_last, f_n, f_failed, f_busy, f_first, f_last in rows:
        if b is None:
            continue
        b = max(0, min(buckets - 1, int(b)))  # runs begun before the window count in its first bucket
        if g_n and str(worker) != "":
            add("gpu", str(worker), b, g_n, g_failed, g_busy, g_first, g_last)
        if f_n:
            add("finalize", "", b, f_n, f_failed, f_busy, f_first, f_last)
    return [lanes[k] for k in sorted(lanes)]


Histogram = dict[str, list[tuple[float, int]]]


def log_histogram(sql_from: str, params: list[Any], kind_col: str, value_sql: str) -> Histogram:
    """{kind: [(value, count)]} ascending: positive values grouped by FLOOR(LN(value) * LOG_STEPS_PER_E)."""
    sql = (f"SELECT {kind_col}, FLOOR(LN({value_sql}) * {LOG_STEPS_PER_E}) AS b, COUNT(*) {sql_from} "
           f"AND {value_sql} > 0 GROUP BY 1, 2")
    hist: Histogram = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for kind, b, n in cursor.fetchall():
            # The bucket's middle: within half a step (0.5%) of every value in it.
            hist.setdefault(str(kind), []).append((math.exp((float(b) + 0.5) / LOG_STEPS_PER_E), int(n)))
    for values in hist.values():
        values.sort()
    return hist


def histogram_percentile(values: list[tuple[float, int]], q: float) -> float | None:
    """Nearest-rank percentile of a histogram of (value, count), ascending."""
    total = sum(n for _, n in values)
    if not total:
        return None
    rank, seen = max(1, math.ceil(q * total)), 0
    for value, n in values:
        seen += n
        if seen >= rank:
            return value
    return values[-1][0]
