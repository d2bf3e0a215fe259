"""The history of a fleet engine, read from its FleetMinute rows: the same timeline and charts as a
local engine's, built from what the collector's polls observed rather than from stored runs.

The timeline's bars are the busy stretches seen at poll resolution (a worker proving at one poll is
counted busy since the previous one), labelled `observed`; throughput is the daemon's counter
deltas per minute; latency is the synthesis + GPU time of the partitions seen finishing (where the
daemon shows partitions, cuzk's HTTP status does); the GPU chart is each GPU's busy share per
minute. Each is one indexed range read (`fleetminute_source_minute`) over the window.
"""
from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from gpu_engine.formatting import duration, worker_label
from statuspanel.history import charts
from statuspanel.history.charts import _polyline as polyline
from statuspanel.history.charts import _rows as latency_rows
from statuspanel.history.timeline import WINDOWS, Bar, Lane, Timeline, _place, _ticks

OBSERVED = "observed"


@dataclass
class ObservedBar(Bar):
    """A busy stretch seen by polls: no job or partition is known for it."""

    @property
    def title(self) -> str:
        return (f"{worker_label(self.worker)} busy {duration(self.end - self.start)}\n"
                "observed at poll resolution (the collector's polls, not the engine's own record)")


def is_fleet_engine(engine_id: str) -> bool:
    from statuspanel.models import FleetMinute, Source

    return (Source.objects.filter(name=engine_id).exists()
            or FleetMinute.objects.filter(source_name=engine_id).exists())


def _rows(engine_id: str, since: float, *fields: str) -> Iterator[tuple[Any, ...]]:
    from statuspanel.models import FleetMinute

    return (FleetMinute.objects.filter(source_name=engine_id, minute__gte=datetime.fromtimestamp(since - 60,
                                                                                                 timezone.utc))
            .order_by().values_list("minute", "lane", *fields).iterator())


def build_fleet_timeline(engine_id: str, window: str, now: float | None = None) -> Timeline:
    """One lane per worker seen in the window, its bars the busy stretches the polls observed."""
    span = WINDOWS[window]
    now = time.time() if now is None else now
    start = now - span
    lanes: dict[str, Lane] = {}
    observed: dict[str, float] = defaultdict(float)
    for minute, lane_key, ordinal, spans in _rows(engine_id, start, "gpu_ordinal", "spans"):
        if not lane_key.startswith("w"):
            continue
        worker = lane_key[1:]
        lane = lanes.get(lane_key)
        if lane is None:
            label = f"{worker_label(worker)}" + (f" · GPU {ordinal}" if ordinal is not None else "")
            lane = lanes[lane_key] = Lane(key=worker, label=label, kind="worker", gpu_ordinal=ordinal)
        m0 = minute.timestamp()
        for s, e in spans or []:
            s, e = max(m0 + s, start), min(m0 + e, now)
            if e > s:
                lane.bars.append(ObservedBar(phase="gpu", state=OBSERVED, start=s, end=e, job_id="", proof_kind="",
                                             index=0, worker=worker))
                observed[lane_key] += e - s
    out = sorted(lanes.values(), key=lambda lane: (len(lane.key), lane.key))
    for lane in out:
        lane.bars.sort(key=lambda b: b.start)
        lane.busy_share = observed[f"w{lane.key}"] / span
        for bar in lane.bars:
            _place(bar, start, span)
    return Timeline(engine_id=engine_id, window=window, start=start, end=now, lanes=out, ticks=_ticks(start, span))


def fleet_throughput(engine_id: str, now: float | None = None, minutes: int = 60) -> dict[str, Any]:
    """Proofs completed per minute by kind (counter deltas), in charts.throughput's shape."""
    now = time.time() if now is None else now
    end = now - now % 60 + 60
    start = end - minutes * 60
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for minute, lane, completed in _rows(engine_id, start + 60, "completed"):
        bucket = int((minute.timestamp() - start) // 60)
        if lane == "" and 0 <= bucket < minutes:
            for kind, n in (completed or {}).items():
                counts[bucket][kind] += int(n)
    return charts.stacked_bars(counts, start, end, minutes)


def fleet_latency(engine_id: str, window_secs: float, now: float | None = None) -> dict[str, Any]:
    """p50/p95 by kind of the synthesis + GPU time of partitions seen finishing (jobs: not visible)."""
    now = time.time() if now is None else now
    parts: dict[str, list[float]] = defaultdict(list)
    for minute, lane, partitions in _rows(engine_id, now - window_secs + 60, "partitions"):
        if lane == "" and minute.timestamp() >= now - window_secs - 60:
            for kind, synth_ms, gpu_ms, _ in partitions or []:
                parts[kind].append(((synth_ms or 0) + (gpu_ms or 0)) / 1000)
    return {"partitions": latency_rows(parts), "jobs": [], "window_secs": window_secs, "observed": True}


def fleet_telemetry(engine_id: str, window_secs: float, now: float | None = None) -> dict[str, Any]:
    """Each GPU's busy share per minute (as the utilisation line); no memory or queue history."""
    now = time.time() if now is None else now
    start = now - window_secs
    gpus: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for minute, lane, ordinal, observed, busy in _rows(engine_id, start + 60, "gpu_ordinal", "observed_secs",
                                                       "busy_secs"):
        if lane.startswith("gpu") and observed > 0:
            gpus[ordinal or 0].append((minute.timestamp() + 30, 100.0 * busy / observed))
    return {"gpus": [{"ordinal": o, "util": polyline(sorted(p), start, window_secs, 100.0), "mem": "",
                      "last_util": sorted(p)[-1][1] if p else None, "mem_total": ""}
                     for o, p in sorted(gpus.items())],
            "queue": {"line": "", "peak": 0, "last": None, "points": 0, "start": start, "end": now},
            "window_secs": window_secs,
            "observed": True}
