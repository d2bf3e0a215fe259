"""The history charts of one engine: throughput, latency percentiles, GPU telemetry, queue depth.

Each function is one indexed range query (`proofjob_engine_finished`, `partitionrun_engine_ended`,
`telemetryminute_unique`) over the window, reduced here to the few numbers a chart shows, laid
out in SVG user units (a 600 x 100 plot; templates/statuspanel/activity/ draw it). Their cost
grows with the rows inside the window, never with the size of the tables.
"""
from __future__ import annotations

import math
import time
from collections import defaultdict
from datetime import datetime, timezone
from typing import Any

from gpu_engine.formatting import duration, human_bytes
from gpu_engine.kinds import PROOF_KINDS, kind_label
from gpu_engine.models import JobStatus, PartitionRun, PartitionState, ProofJob, TelemetryMinute

PLOT_W, PLOT_H = 600.0, 100.0
RANGES = {"1h": 3600.0, "24h": 86400.0}
# One colour class per kind (panel.css .k-<n>), in the kinds' order; unknown kinds get the last.
KIND_ORDER = list(PROOF_KINDS)


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, timezone.utc)


def kind_class(kind: str) -> str:
    return f"k-{KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)}"


def _legend(kinds: list[str]) -> list[dict[str, str]]:
    return [{"kind": k, "label": kind_label(k), "cls": kind_class(k)} for k in kinds]


def throughput(engine_id: str, now: float | None = None, minutes: int = 60) -> dict[str, Any]:
    """Proofs (jobs done) per minute by kind over the last `minutes`, as stacked bars."""
    now = time.time() if now is None else now
    end = now - now % 60 + 60               # the current minute is the last bucket
    start = end - minutes * 60
    rows = (ProofJob.objects.filter(claimed_by=engine_id, finished_at__gte=_dt(start), status=JobStatus.DONE)
            .order_by().values_list("finished_at", "proof_kind"))
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for finished, kind in rows.iterator():
        if finished is None:  # not after the filter on finished_at; the column is nullable
            continue
        bucket = int((finished.timestamp() - start) // 60)
        if 0 <= bucket < minutes:
            counts[bucket][kind] += 1
    kinds = sorted({k for c in counts.values() for k in c}, key=lambda k: (kind_class(k), k))
    peak = max([sum(c.values()) for c in counts.values()] + [1])
    width = PLOT_W / minutes
    bars = []
    for bucket in sorted(counts):
        y = PLOT_H
        label = _dt(start + bucket * 60).strftime("%H:%M")
        for kind in kinds:
            n = counts[bucket].get(kind, 0)
            if not n:
                continue
            h = PLOT_H * n / peak
            y -= h
            bars.append({"x": round(bucket * width + 0.5, 2), "y": round(y, 2),
                         "w": round(width - min(1.0, width * 0.2), 2), "h": round(h, 2), "cls": kind_class(kind),
                         "title": f"{label} · {kind_label(kind)}: {n}/min"})
    total = sum(sum(c.values()) for c in counts.values())
    return {"bars": bars, "peak": peak, "legend": _legend(kinds), "total": total, "minutes": minutes,
            "start": start, "end": end}


def _percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def _rows(values: dict[str, list[float]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kind in sorted(values, key=lambda k: (kind_class(k), k)):
        vals = sorted(values[kind])
        p50, p95 = _percentile(vals, 0.50), _percentile(vals, 0.95)
        out.append({"kind": kind, "label": kind_label(kind), "cls": kind_class(kind), "n": len(vals),
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
    since = _dt(now - window_secs)
    parts: dict[str, list[float]] = defaultdict(list)
    runs = (PartitionRun.objects.filter(engine_id=engine_id, ended_at__gte=since, state=PartitionState.DONE)
            .order_by().values_list("proof_kind", "synth_started_at", "ended_at", "synth_ms", "gpu_ms", "finalize_ms"))
    for kind, s0, end, synth_ms, gpu_ms, fin_ms in runs.iterator():
        if s0 is not None and end is not None:
            parts[kind].append((end - s0).total_seconds())
        else:  # a row from before the phase spans were stored: the phases' sum
            parts[kind].append(sum(v or 0.0 for v in (synth_ms, gpu_ms, fin_ms)) / 1000)
    jobs: dict[str, list[float]] = defaultdict(list)
    rows = (ProofJob.objects.filter(claimed_by=engine_id, finished_at__gte=since, status=JobStatus.DONE)
            .order_by().values_list("proof_kind", "started_at", "finished_at"))
    for kind, started, finished in rows.iterator():
        if started is not None and finished is not None:
            jobs[kind].append((finished - started).total_seconds())
    return {"partitions": _rows(parts), "jobs": _rows(jobs), "window_secs": window_secs}


def _polyline(points: list[tuple[float, float]], start: float, span: float, top: float) -> str:
    top = top or 1.0
    return " ".join(f"{round(PLOT_W * (t - start) / span, 2)},{round(PLOT_H - PLOT_H * min(v, top) / top, 2)}"
                    for t, v in points)


def telemetry(engine_id: str, window_secs: float, now: float | None = None) -> dict[str, Any]:
    """GPU utilisation and memory per GPU and the queue depth, from the one-minute rollups."""
    now = time.time() if now is None else now
    start = now - window_secs
    rows = (TelemetryMinute.objects.filter(engine_id=engine_id, minute__gte=_dt(start - 60))
            .values_list("minute", "gpu_ordinal", "util_pct", "mem_used_bytes", "mem_total_bytes", "queue_depth")
            .order_by("minute"))
    gpus: dict[int, dict[str, Any]] = defaultdict(lambda: {"util": [], "mem": [], "total": None})
    depth: list[tuple[float, float]] = []
    for minute, ordinal, util, used, total, qd in rows.iterator():
        t = minute.timestamp() + 30  # the minute's middle
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
    depth_peak = max([v for _, v in depth] + [1.0])
    return {
        "gpus": [{"ordinal": o, "util": _polyline(g["util"], start, window_secs, 100.0),
                  "mem": _polyline(g["mem"], start, window_secs, 100.0),
                  "last_util": g["util"][-1][1] if g["util"] else None,
                  "mem_total": human_bytes(g["total"]) if g["total"] else ""}
                 for o, g in sorted(gpus.items())],
        "queue": {"line": _polyline(depth, start, window_secs, depth_peak), "peak": int(depth_peak),
                  "last": int(depth[-1][1]) if depth else None, "points": len(depth)},
        "window_secs": window_secs,
    }
