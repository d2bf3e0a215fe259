"""The history charts of one engine: throughput, latency percentiles, GPU telemetry, queue depth.

Each function is one indexed range query (`proofjob_engine_finished`, `partitionrun_engine_ended`,
`telemetryminute_unique`) over the window, reduced here to the few numbers a chart shows, laid
out in SVG user units (a 600 x 100 plot; templates/statuspanel/activity/ draw it). Their cost
grows with the rows inside the window, never with the size of the tables; and the reduction runs in
the database (GROUP BY per minute and kind; latency from a logarithmic histogram once a window holds
more than EXACT_LATENCY_ROWS runs, history/buckets.py), so no chart reads its rows into Python.
Windows longer than an hour (the history page's 24 h and 7 d) do not read the runs at all: their
latency histograms and done counts are summed from the per-hour (and per-minute) rollup the engine's
history writer keeps (gpu_engine/history_rollup.py), a few thousand rows whatever the rate.
"""
from __future__ import annotations

import math
import time
from collections import defaultdict
from datetime import datetime, timezone
from typing import Any

from django.db import connection

from gpu_engine import history_rollup
from gpu_engine.formatting import duration, human_bytes
from gpu_engine.kinds import PROOF_KINDS, kind_label
from gpu_engine.models import JobStatus, PartitionRun, PartitionState, ProofJob, TelemetryMinute
from statuspanel.history import buckets

PLOT_W, PLOT_H = 600.0, 100.0
RANGES = {"1h": 3600.0, "24h": 86400.0, "7d": 7 * 86400.0}
# Windows longer than this read the per-hour rollup (gpu_engine/history_rollup.py) instead of the
# runs; USE_ROLLUP False reads the runs for every window (the benchmark's before/after comparison).
ROLLUP_ABOVE_SECS = 3600.0
USE_ROLLUP = True
# One colour class per kind (panel.css .k-<n>), in the kinds' order; unknown kinds get the last.
KIND_ORDER = list(PROOF_KINDS)
# Up to this many rows a latency table is computed from the rows themselves (exact); above, from a
# histogram grouped in the database (each percentile within 1% of exact).
EXACT_LATENCY_ROWS = 5000
# Grouped by an expression, not the column: an index led by the kind must not win over the window's.
KIND_EXPRESSION = "(proof_kind || '')"


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, timezone.utc)


def kind_class(kind: str) -> str:
    return f"k-{KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)}"


def _legend(kinds: list[str]) -> list[dict[str, str]]:
    return [{"kind": k, "label": kind_label(k), "cls": kind_class(k)} for k in kinds]


# Bar widths of the throughput chart (minutes): the smallest that keeps a range under MAX_BARS bars.
BUCKET_MINUTES = (1, 2, 5, 10, 15, 30, 60)
MAX_BARS = 120
# A young engine's chart starts at its first proof, but never spans less than this (seconds).
MIN_SPAN_SECS = 3600.0


def throughput(engine_id: str, now: float | None = None, minutes: int = 60) -> dict[str, Any]:
    """Proofs (jobs done) per minute by kind over the last `minutes`, as stacked bars: up to an hour
    counted from the jobs, beyond from the rollup's done counts (5-minute bins for a day, hours for a
    week). The time axis starts at the engine's first proof in the range when that is later (an engine
    younger than the range would otherwise be a sliver at its right edge), and bars widen with the
    span; a bar's height is its mean rate."""
    now = time.time() if now is None else now
    if USE_ROLLUP and minutes > 60:
        return _throughput_rollup(engine_id, now, minutes)
    end = now - now % 60 + 60               # the current minute is the last bucket
    start = end - minutes * 60
    per_minute: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    finished = history_rollup.epoch("finished_at")
    with connection.cursor() as cursor:  # one count per minute and kind, grouped in the database
        cursor.execute(f"SELECT FLOOR(({finished} - %s) / 60), proof_kind, COUNT(*) "
                       f"FROM {buckets.table(ProofJob)} "
                       "WHERE claimed_by = %s AND finished_at >= %s AND status = %s GROUP BY 1, 2",
                       [start, engine_id, _dt(start), JobStatus.DONE])
        for minute, kind, n in cursor.fetchall():
            if minute is not None and 0 <= int(minute) < minutes:
                per_minute[int(minute)][kind] += int(n)
    return stacked_bars(per_minute, start, end, minutes)


def stacked_bars(per_minute: dict[int, dict[str, int]], start: float, end: float, minutes: int,
                 bucket: int | None = None) -> dict[str, Any]:
    """Counts by kind per minute ({minute from `start`: {kind: n}}) as the throughput chart's stacked bars
    (local engines' done jobs; fleet engines' counter deltas, statuspanel/history/fleet.py), in bars of
    `bucket` minutes (by default the narrowest that keeps the span under MAX_BARS bars)."""
    if per_minute:  # a young engine's chart starts at its first proof, not at the range's left edge
        first = start + 60 * min(per_minute)
        first_start = max(start, min(end - MIN_SPAN_SECS, first))
    else:
        first_start = start
    span_minutes = max(1, round((end - first_start) / 60))
    if bucket is None:
        bucket = next((b for b in BUCKET_MINUTES if span_minutes / b <= MAX_BARS), BUCKET_MINUTES[-1])
    n_buckets = math.ceil(span_minutes / bucket)
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for minute, by_kind in per_minute.items():
        index = int((start + 60 * minute - first_start) // (60 * bucket))
        if 0 <= index < n_buckets:
            for kind, n in by_kind.items():
                counts[index][kind] += n
    start = first_start
    kinds = sorted({k for c in counts.values() for k in c}, key=lambda k: (kind_class(k), k))
    peak = max([sum(c.values()) / bucket for c in counts.values()] + [1.0 / bucket])
    width = PLOT_W / n_buckets
    bars = []
    for index in sorted(counts):
        y = PLOT_H
        label = _dt(start + index * 60 * bucket).strftime("%H:%M")
        per = "/min" if bucket == 1 else f" in {bucket} min"
        for kind in kinds:
            n = counts[index].get(kind, 0)
            if not n:
                continue
            h = PLOT_H * n / bucket / peak
            y -= h
            bars.append({"x": round(index * width + 0.5, 2), "y": round(y, 2),
                         "w": round(width - min(1.0, width * 0.2), 2), "h": round(h, 2), "cls": kind_class(kind),
                         "title": f"{label} · {kind_label(kind)}: {n}{per}"})
    total = sum(sum(c.values()) for c in counts.values())
    return {"bars": bars, "peak": peak, "peak_text": f"{peak:.3g}", "legend": _legend(kinds), "total": total,
            "minutes": minutes, "bucket_minutes": bucket, "start": start, "end": end}


def _bin_minutes(minutes: int) -> int:
    return 60 if minutes > 1440 else 5


def _throughput_rollup(engine_id: str, now: float, minutes: int) -> dict[str, Any]:
    """Done jobs per bin from the rollup (minute rows for 5-minute bins, hour rows for hourly ones),
    drawn by the same stacked bars."""
    size = _bin_minutes(minutes)
    end = now - now % 60 + 60
    start = end - minutes * 60
    start -= start % (size * 60)              # bins on whole 5 minutes / hours
    span_minutes = math.ceil((end - start) / 60)
    per_minute: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    span = history_rollup.HOUR if size == 60 else history_rollup.MINUTE
    for b, kind, n in history_rollup.done_per_bin(engine_id, span, _dt(start), _dt(end), size * 60):
        if 0 <= b * size < span_minutes:
            per_minute[b * size][kind] += n
    return {**stacked_bars(per_minute, start, end, minutes, bucket=size), "bin_minutes": size}


def _percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def _rows(values: dict[str, list[float]], hist: buckets.Histogram | None = None) -> list[dict[str, Any]]:
    """Latency rows by kind from exact `values`, or from a histogram `hist` of (value, count)."""
    out: list[dict[str, Any]] = []
    for kind in sorted(hist if hist is not None else values, key=lambda k: (kind_class(k), k)):
        if hist is not None:
            p50, p95 = buckets.histogram_percentile(hist[kind], 0.50), buckets.histogram_percentile(hist[kind], 0.95)
            n = sum(c for _, c in hist[kind])
        else:
            vals = sorted(values[kind])
            p50, p95, n = _percentile(vals, 0.50), _percentile(vals, 0.95), len(vals)
        out.append({"kind": kind, "label": kind_label(kind), "cls": kind_class(kind), "n": n,
                    "p50": p50, "p95": p95, "p50_text": duration(p50), "p95_text": duration(p95)})
    peak = max([r["p95"] for r in out] + [1e-9])
    for r in out:
        r["p50_pct"] = round(100.0 * r["p50"] / peak, 2)
        r["p95_pct"] = round(100.0 * r["p95"] / peak, 2)
    return out


def latency(engine_id: str, window_secs: float, now: float | None = None) -> dict[str, Any]:
    """p50/p95 by kind of partition latency (synthesis start to settlement) and job latency
    (claim to stored bundle), over proven partitions and done jobs of the last `window_secs`."""
    now = time.time() if now is None else now
    if USE_ROLLUP and window_secs > ROLLUP_ABOVE_SECS:
        return _latency_rollup(engine_id, window_secs, now)
    since = _dt(now - window_secs)
    runs = PartitionRun.objects.filter(engine_id=engine_id, ended_at__gte=since, state=PartitionState.DONE).order_by()
    jobs_qs = ProofJob.objects.filter(claimed_by=engine_id, finished_at__gte=since, status=JobStatus.DONE).order_by()
    if runs.count() > EXACT_LATENCY_ROWS:
        return _latency_histograms(engine_id, since, window_secs)
    return _latency_exact(runs, jobs_qs, window_secs)


def _latency_rollup(engine_id: str, window_secs: float, now: float) -> dict[str, Any]:
    """A day or a week: the histograms summed from the rollup's hours (the window starts at the top
    of its first hour); exact from the rows when the window holds few runs and jobs."""
    start = now - window_secs
    start -= start % history_rollup.HOUR
    hists = history_rollup.histograms(engine_id, (history_rollup.PARTITION, history_rollup.JOB), _dt(start),
                                       _dt(now))
    if all(sum(sum(c.values()) for c in h.values()) <= EXACT_LATENCY_ROWS for h in hists.values()):
        since = _dt(start)
        runs = PartitionRun.objects.filter(engine_id=engine_id, ended_at__gte=since, state=PartitionState.DONE)
        jobs_qs = ProofJob.objects.filter(claimed_by=engine_id, finished_at__gte=since, status=JobStatus.DONE)
        return _latency_exact(runs.order_by(), jobs_qs.order_by(), window_secs)

    def histogram(by_kind: dict[str, dict[int, int]]) -> buckets.Histogram:
        return {kind: [(history_rollup.bucket_value(b), n) for b, n in sorted(c.items())]
                for kind, c in by_kind.items()}

    return {"partitions": _rows({}, histogram(hists[history_rollup.PARTITION])),
            "jobs": _rows({}, histogram(hists[history_rollup.JOB])), "window_secs": window_secs}


def _latency_histograms(engine_id: str, since: datetime, window_secs: float) -> dict[str, Any]:
    """Many runs in the window: percentiles from histograms grouped in the database."""
    part_table = buckets.table(PartitionRun)
    s0, end = history_rollup.epoch("synth_started_at"), history_rollup.epoch("ended_at")
    # A row from before the phase spans were stored counts its phases' sum.
    phases = "(COALESCE(synth_ms, 0) + COALESCE(gpu_ms, 0) + COALESCE(finalize_ms, 0)) / 1000.0"
    value = f"(CASE WHEN synth_started_at IS NOT NULL THEN {end} - {s0} ELSE {phases} END)"
    parts = buckets.log_histogram(f"FROM {part_table} WHERE engine_id = %s AND ended_at >= %s AND state = %s",
                                  [engine_id, since, PartitionState.DONE], KIND_EXPRESSION, value)
    job_table = buckets.table(ProofJob)
    jobs = buckets.log_histogram(
        f"FROM {job_table} WHERE claimed_by = %s AND finished_at >= %s AND status = %s AND started_at IS NOT NULL",
        [engine_id, since, JobStatus.DONE], KIND_EXPRESSION,
        f"({history_rollup.epoch('finished_at')} - {history_rollup.epoch('started_at')})")
    return {"partitions": _rows({}, parts), "jobs": _rows({}, jobs), "window_secs": window_secs}


def _latency_exact(runs: Any, jobs_qs: Any, window_secs: float) -> dict[str, Any]:
    parts: dict[str, list[float]] = defaultdict(list)
    runs = runs.values_list("proof_kind", "synth_started_at", "ended_at", "synth_ms", "gpu_ms", "finalize_ms")
    for kind, s0, end, synth_ms, gpu_ms, fin_ms in runs.iterator():
        if s0 is not None and end is not None:
            parts[kind].append((end - s0).total_seconds())
        else:  # a row from before the phase spans were stored: the phases' sum
            parts[kind].append(sum(v or 0.0 for v in (synth_ms, gpu_ms, fin_ms)) / 1000)
    jobs: dict[str, list[float]] = defaultdict(list)
    rows = jobs_qs.values_list("proof_kind", "started_at", "finished_at")
    for kind, started, finished in rows.iterator():
        if started is not None and finished is not None:
            jobs[kind].append((finished - started).total_seconds())
    return {"partitions": _rows(parts), "jobs": _rows(jobs), "window_secs": window_secs}


def _polyline(points: list[tuple[float, float]], start: float, span: float, top: float) -> str:
    top = top or 1.0
    return " ".join(f"{round(PLOT_W * (t - start) / span, 2)},{round(PLOT_H - PLOT_H * min(v, top) / top, 2)}"
                    for t, v in points)


def telemetry(engine_id: str, window_secs: float, now: float | None = None,
              live_queue: int | None = None) -> dict[str, Any]:
    """GPU utilisation and memory per GPU and the queue depth, from the one-minute rollups; the
    engine's live queue depth (its latest snapshot), when given, is the line's last point and its
    "now", so the line is drawn from the first rollup on and "now" never lags a minute behind."""
    now = time.time() if now is None else now
    start = now - window_secs
    rows = (TelemetryMinute.objects.filter(engine_id=engine_id, minute__gte=_dt(start - 60))
            .values_list("minute", "gpu_ordinal", "util_pct", "mem_used_bytes", "mem_total_bytes", "queue_depth")
            .order_by("minute"))
    gpus: dict[int, dict[str, Any]] = defaultdict(lambda: {"util": [], "mem": [], "total": None})
    depth: list[tuple[float, float]] = []
    for minute, ordinal, util, used, total, qd in rows.iterator():
        t = min(minute.timestamp() + 30, now)  # the minute's middle (the current one's: up to now)
        if ordinal == TelemetryMinute.ENGINE_ROW:
            if qd is not None:
                depth.append((t, float(qd)))
            continue
        g = gpus[ordinal]
        if util is not None:
            g["util"].append((t, util))
        if used is not None and total:
            g["mem"].append((t, 100.0 * used / total))
            g["total"] = total
    if live_queue is not None:
        depth.append((now, float(live_queue)))
    depth_peak = max([v for _, v in depth] + [1.0])
    samples = len(depth)
    if len(depth) == 1:  # one sample: a short tick at its place rather than nothing
        depth.insert(0, (depth[0][0] - window_secs / 120, depth[0][1]))
    return {
        "gpus": [{"ordinal": o, "util": _polyline(g["util"], start, window_secs, 100.0),
                  "mem": _polyline(g["mem"], start, window_secs, 100.0),
                  "last_util": g["util"][-1][1] if g["util"] else None,
                  "mem_total": human_bytes(g["total"]) if g["total"] else ""}
                 for o, g in sorted(gpus.items())],
        "queue": {"line": _polyline(depth, start, window_secs, depth_peak), "peak": int(depth_peak),
                  "last": int(depth[-1][1]) if depth else None, "points": samples,
                  "start": start, "end": now},
        "window_secs": window_secs,
    }
