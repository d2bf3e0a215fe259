"""Latency histograms per hour and per day, done counts per minute and per hour: what the 24 h and
7 d history charts read instead of the runs themselves.

A busy engine settles 10^6 partitions a day; percentiles over a day or a week read from the runs cost
seconds however they are grouped (every row in the window is read). The history writer therefore
adds each proven partition and each done job, as it stores them, into `HistoryRollup` rows: one per
(engine, hour or day, measure, kind, logarithmic bucket), and one count per (engine, minute or hour,
kind) of done jobs. A week is then a sum over 6 days and at most 47 hours x kinds x buckets rows,
whatever the rate.

Buckets are FLOOR(LN(seconds) * STEPS_PER_E): edges 1% apart, and a bucket's middle is within 0.5%
of every value in it, so a percentile from the rollup is within 0.5% of the exact nearest-rank one.
Rows are added to (INSERT ... ON CONFLICT DO UPDATE count = count + new), so an engine restarted
within an hour, or two engines' writers, never overwrite each other. `backfill` builds the same rows
from stored runs and jobs in SQL (the migration that introduced them; the benchmark's seeded rows).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any

from django.db import connection

from gpu_engine.models import HistoryRollup, JobStatus, PartitionRun, PartitionState, ProofJob

STEPS_PER_E = 100
MINUTE, HOUR, DAY = 60, 3600, 86400
# Latency histograms are kept per hour and per day (UTC): a week is 6 whole days plus the hours at its ends.
HISTOGRAM_SPANS = (HOUR, DAY)
PARTITION, JOB, DONE = "partition", "job", "done"
Key = tuple[str, int, str, datetime, str, int]  # engine, span, measure, period start, kind, bucket


def bucket_of(secs: float) -> int | None:
    """The logarithmic bucket of a positive duration (None for zero or negative: not counted)."""
    return math.floor(math.log(secs) * STEPS_PER_E) if secs > 0 else None


def bucket_value(bucket: int) -> float:
    """The bucket's middle (geometric): within half a step of every value in it."""
    return math.exp((bucket + 0.5) / STEPS_PER_E)


def period_start(when: datetime, span: int) -> datetime:
    ts = when.timestamp()
    return datetime.fromtimestamp(ts - ts % span, timezone.utc)


def partition_latency(run: PartitionRun) -> float | None:
    """Synthesis start to settlement, as the charts define it (the phases' sum for a row without spans)."""
    if run.synth_started_at is not None and run.ended_at is not None:
        return (run.ended_at - run.synth_started_at).total_seconds()
    return sum(v or 0.0 for v in (run.synth_ms, run.gpu_ms, run.finalize_ms)) / 1000


def run_counts(runs: Iterable[PartitionRun]) -> Counter[Key]:
    """The rollup increments of the proven partitions among `runs`."""
    counts: Counter[Key] = Counter()
    for run in runs:
        if run.state != PartitionState.DONE or run.ended_at is None:
            continue
        latency = partition_latency(run)
        bucket = bucket_of(latency) if latency is not None else None
        if bucket is not None:
            for span in HISTOGRAM_SPANS:
                counts[(run.engine_id, span, PARTITION, period_start(run.ended_at, span), run.proof_kind, bucket)] += 1
    return counts


def job_counts(jobs: Iterable[tuple[str, str, datetime | None, datetime]]) -> Counter[Key]:
    """The rollup increments of done jobs given as (engine, kind, started_at, finished_at)."""
    counts: Counter[Key] = Counter()
    for engine_id, kind, started, finished in jobs:
        for span in (MINUTE, HOUR):
            counts[(engine_id, span, DONE, period_start(finished, span), kind, 0)] += 1
        bucket = bucket_of((finished - started).total_seconds()) if started is not None else None
        if bucket is not None:
            for span in HISTOGRAM_SPANS:
                counts[(engine_id, span, JOB, period_start(finished, span), kind, bucket)] += 1
    return counts


def _table() -> str:
    return connection.ops.quote_name(HistoryRollup._meta.db_table)  # noqa: SLF001 - Django's documented Options API


_COLUMNS = "engine_id, span_secs, measure, period, proof_kind, bucket"


def _upsert_tail() -> str:
    table = _table()
    return f"ON CONFLICT ({_COLUMNS}) DO UPDATE SET count = {table}.count + excluded.count"


def add(counts: Counter[Key]) -> None:
    """Add `counts` to the stored rows (one statement per batch; the caller's transaction)."""
    if not counts:
        return
    adapt = connection.ops.adapt_datetimefield_value
    rows = [(e, span, m, adapt(p), k, b, n) for (e, span, m, p, k, b), n in sorted(counts.items())]
    with connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {_table()} ({_COLUMNS}, count) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                           + _upsert_tail(), rows)


def record_runs(runs: Iterable[PartitionRun]) -> None:
    """The history writer: count the proven partitions of a batch it just stored."""
    add(run_counts(runs))


def record_job_done(pk: int) -> None:
    """The history writer, once a job is marked done: count it with the times the database holds."""
    row = (ProofJob.objects.filter(pk=pk, status=JobStatus.DONE, finished_at__isnull=False)
           .values_list("claimed_by", "proof_kind", "started_at", "finished_at").first())
    if row is not None:
        engine, kind, started_at, finished_at = row
        if finished_at is not None:  # always so (the filter above): narrows the column's type
            add(job_counts([(engine, kind, started_at, finished_at)]))


def _trunc(column: str, span: int) -> str:
    """SQL: the start of the minute, hour or day of a datetime column, as this database stores datetimes."""
    unit, fmt = {MINUTE: ("minute", "%Y-%m-%d %H:%M:00"), HOUR: ("hour", "%Y-%m-%d %H:00:00"),
                 DAY: ("day", "%Y-%m-%d 00:00:00")}[span]
    if connection.vendor == "postgresql":
        return f"date_trunc('{unit}', {column})"
    return f"strftime('{fmt}', {column})"


def epoch(column: str) -> str:
    """SQL for a datetime column as unix seconds (float), to the microsecond, for a query run with
    parameters (its "%" is doubled).

    SQLite's date functions keep milliseconds only, rounded (a time at .9996 s reads as the next
    second), so there the whole seconds come from `strftime('%s')` of the text cut before its fraction
    and the fraction from the stored text ("YYYY-MM-DD HH:MM:SS.ffffff"): a duration computed in SQL
    falls in the same latency bucket as one computed in Python from the same values (the writer's
    rollup and the charts' histograms agree)."""
    if connection.vendor == "postgresql":
        return f"EXTRACT(EPOCH FROM {column})"
    return (f"(CAST(strftime('%%s', substr({column}, 1, 19)) AS REAL) "
            f"+ COALESCE(CAST(substr({column}, 20) AS REAL), 0.0))")


def backfill(since: datetime) -> None:
    """Build the rollup of the runs settled and the jobs done since `since` from the stored rows, in
    SQL (added to what is there: run it once, on rows the writer has not counted)."""
    runs, jobs = (connection.ops.quote_name(m._meta.db_table) for m in (PartitionRun, ProofJob))  # noqa: SLF001
    value = (f"(CASE WHEN synth_started_at IS NOT NULL THEN {epoch('ended_at')} - {epoch('synth_started_at')} "
             "ELSE (COALESCE(synth_ms, 0) + COALESCE(gpu_ms, 0) + COALESCE(finalize_ms, 0)) / 1000.0 END)")
    job_value = f"({epoch('finished_at')} - {epoch('started_at')})"
    insert = f"INSERT INTO {_table()} ({_COLUMNS}, count) "
    since_db = connection.ops.adapt_datetimefield_value(since)
    with connection.cursor() as cursor:
        for span in HISTOGRAM_SPANS:
            cursor.execute(insert + f"SELECT engine_id, {span}, '{PARTITION}', {_trunc('ended_at', span)}, "
                           f"proof_kind, CAST(FLOOR(LN({value}) * {STEPS_PER_E}) AS INTEGER), COUNT(*) FROM {runs} "
                           f"WHERE state = %s AND ended_at >= %s AND {value} > 0 GROUP BY 1, 2, 3, 4, 5, 6 "
                           + _upsert_tail(), [PartitionState.DONE, since_db])
            cursor.execute(insert + f"SELECT claimed_by, {span}, '{JOB}', {_trunc('finished_at', span)}, proof_kind, "
                           f"CAST(FLOOR(LN({job_value}) * {STEPS_PER_E}) AS INTEGER), COUNT(*) FROM {jobs} "
                           f"WHERE status = %s AND finished_at >= %s AND started_at IS NOT NULL AND {job_value} > 0 "
                           "GROUP BY 1, 2, 3, 4, 5, 6 " + _upsert_tail(), [JobStatus.DONE, since_db])
        for span in (MINUTE, HOUR):
            cursor.execute(insert + f"SELECT claimed_by, {span}, '{DONE}', {_trunc('finished_at', span)}, proof_kind, "
                           f"0, COUNT(*) FROM {jobs} WHERE status = %s AND finished_at >= %s "
                           "GROUP BY 1, 2, 3, 4, 5, 6 " + _upsert_tail(), [JobStatus.DONE, since_db])


def prune_batch(cutoff: datetime, batch: int) -> int:
    """Delete at most `batch` rows of periods that began an hour before `cutoff` (the hour reaching
    past it is kept: a 7 d chart starts at the top of the hour 7 days ago, and reads day rows only for
    the whole days after that); how many."""
    ids = list(HistoryRollup.objects.filter(period__lt=cutoff - timedelta(seconds=HOUR)).order_by()
               .values_list("pk", flat=True)[:batch])
    if ids:
        HistoryRollup.objects.filter(pk__in=ids).delete()
    return len(ids)


def _where(engine_id: str, span: int, measures: tuple[str, ...], start: datetime,
           end: datetime | None) -> tuple[str, list[Any]]:
    adapt = connection.ops.adapt_datetimefield_value
    sql = (f"FROM {_table()} WHERE engine_id = %s AND span_secs = %s "
           f"AND measure IN ({', '.join(['%s'] * len(measures))}) AND period >= %s")
    params: list[Any] = [engine_id, span, *measures, adapt(start)]
    if end is not None:
        sql, params = sql + " AND period < %s", [*params, adapt(end)]
    return sql, params


def histograms(engine_id: str, measures: tuple[str, ...], start: datetime,
               now: datetime) -> dict[str, dict[str, dict[int, int]]]:
    """{measure: {kind: {bucket: count}}} of `engine_id` from `start` (the top of an hour) on: the
    whole UTC days from day rows, the hours before the first and after the last from hour rows; each
    part summed in the database (a range read of the unique index; a few hundred rows come back)."""
    first_day = period_start(start - timedelta(seconds=1), DAY) + timedelta(seconds=DAY)
    today = period_start(now, DAY)
    if first_day < today:
        parts = [(HOUR, start, first_day), (DAY, first_day, today), (HOUR, today, None)]
    else:
        parts = [(HOUR, start, None)]
    out: dict[str, dict[str, dict[int, int]]] = {m: {} for m in measures}
    with connection.cursor() as cursor:
        for span, begin, end in parts:
            where, params = _where(engine_id, span, measures, begin, end)
            cursor.execute(f"SELECT measure, proof_kind, bucket, SUM(count) {where} GROUP BY 1, 2, 3", params)
            for measure, kind, bucket, n in cursor.fetchall():
                counts = out[str(measure)].setdefault(str(kind), {})
                counts[int(bucket)] = counts.get(int(bucket), 0) + int(n)
    return out


def done_per_bin(engine_id: str, span: int, start: datetime, end: datetime,
                 bin_secs: int) -> list[tuple[int, str, int]]:
    """(bin, kind, done jobs) of `engine_id` in [start, end), bins of `bin_secs` from `start`, summed
    in the database from the rows of `span` (minutes or hours)."""
    where, params = _where(engine_id, span, (DONE,), start, end)
    sql = (f"SELECT FLOOR(({epoch('period')} - %s) / {int(bin_secs)}), proof_kind, SUM(count) {where} "
           "GROUP BY 1, 2")
    with connection.cursor() as cursor:
        cursor.execute(sql, [start.timestamp(), *params])
        return [(int(b), str(k), int(n)) for b, k, n in cursor.fetchall() if b is not None]
