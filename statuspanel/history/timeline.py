"""The GPU timeline: one lane per GPU worker (and the finalizers') over the last minutes, as bars.

Built from two sources that meet at "now": the stored partition runs (each phase's wall-clock start
and end, written by the engine's history writer as partitions settle) and the live snapshot (the
partitions on a GPU or finalizing at this moment, whose start is the snapshot's time minus their
open duration). A reload therefore rebuilds the same bars from the database. The result is plain
data laid out in percent of the window; templates/statuspanel/activity/_timeline.html draws it as SVG.

A window with more than EXACT_RUNS settled runs is drawn aggregated (history/buckets.py): the
database groups the runs per lane into BUCKETS time buckets and each busy bucket is one bar saying
how many partitions it holds, so bytes and time stay bounded whatever the engine's rate.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from gpu_engine.formatting import duration, ms_duration, worker_label
from gpu_engine.kinds import kind_label
from gpu_engine.models import PartitionRun
from gpu_engine.schema import SnapshotDocument
from gpu_engine.vocabulary import FINALIZING, GPU
from statuspanel.history import buckets

WINDOWS = {"10m": 600.0, "60m": 3600.0}
DEFAULT_WINDOW = "10m"
# Idle stretches shorter than this share of the window are not drawn as gaps (a 10-minute window:
# 1 s); the bars' own spacing shows them.
GAP_SHARE = 1.0 / 600
# Narrower bars are drawn at this width (percent) so that a 50 ms partition in a 60-minute view stays visible.
MIN_BAR_PCT = 0.15
LIVE = "live"
FINALIZER_LANE = "finalizer"
# More settled runs than this in the window and the lanes are drawn from buckets, not one bar per run.
EXACT_RUNS = 400
AGGREGATED = "aggregated"


@dataclass
class Bar:
    phase: str              # "gpu" (worker lane) or "finalize" (finalizer lane)
    state: str              # the run's state (done, failed, retried, cancelled) or "live"
    start: float            # unix seconds
    end: float
    job_id: str
    proof_kind: str
    index: int
    worker: str
    synth_ms: float | None = None
    gpu_ms: float | None = None
    finalize_ms: float | None = None
    error: str = ""
    attempt: int = 0        # the job's claim the run belongs to (0: not recorded, or live)
    x_pct: float = 0.0
    w_pct: float = 0.0

    @property
    def failed(self) -> bool:
        return self.state in ("failed", "retried", "cancelled")

    @property
    def title(self) -> str:
        """The tooltip: whole job id, kind label, partition, durations (and the error of a failed attempt)."""
        lines = [self.job_id, f"{kind_label(self.proof_kind)} ({self.proof_kind})" if self.proof_kind else "?",
                 f"partition {self.index} · {worker_label(_as_int(self.worker))} · {self.state}"
                 + (f" · attempt {self.attempt}" if self.attempt else ""),
                 f"{self.phase} {duration(self.end - self.start)}"]
        spans = (("synthesis", self.synth_ms), ("gpu", self.gpu_ms), ("finalize", self.finalize_ms))
        phases = [f"{name} {ms_duration(ms)}" for name, ms in spans if ms is not None]
        if phases:
            lines.append(" · ".join(phases))
        if self.error:
            lines.append(self.error)
        return "\n".join(lines)


@dataclass
class BucketBar(Bar):
    """One time bucket of a lane drawn aggregated: `index` is how many runs started in it."""
    failures: int = 0
    busy: float = 0.0

    @property
    def failed(self) -> bool:
        return self.failures > 0

    @property
    def title(self) -> str:
        bits = [f"{self.index} partition{'s' if self.index != 1 else ''} · {self.phase} busy {duration(self.busy)}"]
        if self.failures:
            bits.append(f"{self.failures} failed")
        return " · ".join(bits)


def bucket_bars(engine_id: str, start: float, end: float) -> list[Bar]:
    """The window's runs as bars of busy buckets (history/buckets.py), one lane's adjacent buckets
    merged while none of them holds a failure: a lane busy all along is one bar, failures stand out."""
    bars: list[BucketBar] = []
    last: dict[tuple[str, str], tuple[int, BucketBar]] = {}
    rows = buckets.lane_buckets(engine_id, start, end)
    for row in sorted(rows, key=lambda r: (r["phase"], r["worker"], r["bucket"])):
        lane = (row["phase"], row["worker"])
        first, stop = max(row["first"], row["start"]), min(row["last"], row["end"])
        prev = last.get(lane)
        if prev is not None and prev[0] == row["bucket"] - 1 and not prev[1].failures and not row["failed"]:
            bar = prev[1]
            bar.end, bar.index, bar.busy = max(bar.end, stop), bar.index + row["count"], bar.busy + row["busy"]
        else:
            bar = BucketBar(phase=row["phase"], state=AGGREGATED, start=first, end=max(stop, first), job_id="",
                            proof_kind="", index=row["count"], worker=row["worker"], failures=row["failed"],
                            busy=row["busy"])
            bars.append(bar)
        last[lane] = (row["bucket"], bar)
    return list(bars)


@dataclass
class Gap:
    start: float
    end: float
    x_pct: float = 0.0
    w_pct: float = 0.0

    @property
    def title(self) -> str:
        return f"idle {duration(self.end - self.start)}"


@dataclass
class Lane:
    key: str
    label: str
    kind: str                           # "worker" or "finalizer"
    gpu_ordinal: int | None = None
    bars: list[Bar] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    busy_share: float = 0.0


@dataclass
class Timeline:
    engine_id: str
    window: str
    start: float
    end: float
    lanes: list[Lane]
    ticks: list[dict[str, Any]]
    aggregated: bool = False

    @property
    def span(self) -> float:
        return self.end - self.start


def _as_int(value: Any) -> Any:
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def stored_bars(engine_id: str, since: float) -> list[Bar]:
    """The gpu and finalize bars of the partition runs this engine settled since `since` (unix).

    One indexed range read (`partitionrun_engine_ended`): every run overlapping the window settled
    after the window opened."""
    rows = (PartitionRun.objects.filter(engine_id=engine_id, ended_at__gte=datetime.fromtimestamp(since, timezone.utc))
            .order_by()  # no ORDER BY: the model's ordering would walk another index; lanes sort in Python
            .values_list("job__job_id", "proof_kind", "index", "state", "worker_id", "gpu_started_at", "gpu_ended_at",
                         "finalize_started_at", "finalize_ended_at", "synth_ms", "gpu_ms", "finalize_ms", "error",
                         "attempt"))
    bars: list[Bar] = []
    for job_id, kind, index, state, worker, g0, g1, f0, f1, synth_ms, gpu_ms, fin_ms, error, attempt in rows.iterator():
        common: dict[str, Any] = dict(state=state, job_id=job_id, proof_kind=kind, index=index, worker=str(worker),
                      synth_ms=synth_ms, gpu_ms=gpu_ms, finalize_ms=fin_ms, error=error or "", attempt=attempt)
        if g0 is not None and g1 is not None and worker != "":
            bars.append(Bar(phase="gpu", start=g0.timestamp(), end=g1.timestamp(), **common))
        if f0 is not None and f1 is not None:
            bars.append(Bar(phase="finalize", start=f0.timestamp(), end=f1.timestamp(), **common))
    return bars


def snapshot_time(snap: SnapshotDocument, default: float) -> float:
    """When the snapshot was taken: its publish stamp, else its ISO `generated_at`, else `default`."""
    published = snap.get("published_at")
    if isinstance(published, (int, float)) and not isinstance(published, bool):
        return float(published)
    try:
        return datetime.fromisoformat(str(snap.get("generated_at"))).timestamp()
    except ValueError:
        return default


def live_bars(snap: SnapshotDocument, now: float) -> list[Bar]:
    """Bars of the partitions on a GPU or finalizing in this snapshot, open up to `now`."""
    taken = snapshot_time(snap, now)
    bars: list[Bar] = []
    for pipe in snap.get("pipelines") or []:
        if not isinstance(pipe, dict):
            continue
        for part in pipe.get("partitions") or []:
            if not isinstance(part, dict) or part.get("state") not in (GPU, FINALIZING):
                continue
            gpu_ms, fin_ms = _ms(part.get("gpu_ms")), _ms(part.get("finalize_ms"))
            common: dict[str, Any] = dict(state=LIVE, job_id=str(pipe.get("job_id") or ""),
                          proof_kind=str(pipe.get("proof_kind") or ""), index=int(part.get("index") or 0),
                          worker=str(part.get("worker_id") or ""),
                          synth_ms=_ms(part.get("synth_ms")), gpu_ms=gpu_ms, finalize_ms=fin_ms)
            if part["state"] == GPU:
                bars.append(Bar(phase="gpu", start=taken - (gpu_ms or 0) / 1000, end=now, **common))
            else:
                fin_start = taken - (fin_ms or 0) / 1000
                if common["worker"]:
                    bars.append(Bar(phase="gpu", start=fin_start - (gpu_ms or 0) / 1000, end=fin_start,
                                    **{**common, "state": "done"}))
                bars.append(Bar(phase="finalize", start=fin_start, end=now, **common))
    return bars


def _ms(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _covered(bars: list[Bar], start: float, end: float) -> list[tuple[float, float]]:
    """The union of the bars' intervals, clipped to [start, end], in order."""
    spans = sorted((max(b.start, start), min(b.end, end)) for b in bars if b.end > start and b.start < end)
    merged: list[tuple[float, float]] = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def _busy(bars: list[Bar], covered: list[tuple[float, float]], span: float) -> float:
    """A lane's busy share: the union of its bars, or the runs' own busy seconds where bars are buckets."""
    if any(isinstance(b, BucketBar) for b in bars):
        return sum(b.busy if isinstance(b, BucketBar) else b.end - b.start for b in bars) / span
    return sum(e - s for s, e in covered) / span


def _place(item: Bar | Gap, start: float, span: float) -> None:
    s, e = max(item.start, start), min(item.end, start + span)
    item.x_pct = round(100.0 * (s - start) / span, 3)
    item.w_pct = round(max(100.0 * (e - s) / span, MIN_BAR_PCT), 3)
    item.w_pct = min(item.w_pct, round(100.0 - item.x_pct, 3))


def _pack_finalizers(bars: list[Bar]) -> list[list[Bar]]:
    """Finalize bars overlap (a thread pool): pack them greedily into as few lanes as keep them apart."""
    lanes: list[list[Bar]] = []
    for bar in sorted(bars, key=lambda b: (b.start, b.end)):
        for lane in lanes:
            if lane[-1].end <= bar.start:
                lane.append(bar)
                break
        else:
            lanes.append([bar])
    return lanes or [[]]


def _ticks(start: float, span: float) -> list[dict[str, Any]]:
    step = 60.0 if span <= 900 else 600.0
    out = []
    t = start - start % step + step
    while t < start + span:
        out.append({"x_pct": round(100.0 * (t - start) / span, 3),
                    "label": datetime.fromtimestamp(t, timezone.utc).strftime("%H:%M")})
        t += step
    return out


def build_timeline(snap: SnapshotDocument | None, engine_id: str, window: str = DEFAULT_WINDOW,
                   now: float | None = None) -> Timeline:
    """The timeline of one engine over `window` ("10m" or "60m") ending `now`."""
    span = WINDOWS[window]
    now = time.time() if now is None else now
    start = now - span
    aggregated = buckets.runs_since(engine_id, start) > EXACT_RUNS
    stored = bucket_bars(engine_id, start, now) if aggregated else stored_bars(engine_id, start)
    bars = [b for b in stored + (live_bars(snap, now) if snap else []) if b.end > start and b.start < now]
    lanes: list[Lane] = []
    workers = [(str(w.get("worker_id")), w.get("gpu_ordinal")) for w in (snap or {}).get("gpu_workers") or []
               if isinstance(w, dict) and w.get("worker_id") is not None]
    known = {w for w, _ in workers}
    extra = sorted({b.worker for b in bars if b.phase == "gpu" and b.worker} - known, key=lambda w: (len(w), w))
    for worker, ordinal in workers + [(w, None) for w in extra]:
        label = worker_label(_as_int(worker)) + (f" · GPU {ordinal}" if ordinal is not None else "")
        lane = Lane(key=worker, label=label, kind="worker", gpu_ordinal=ordinal,
                    bars=sorted((b for b in bars if b.phase == "gpu" and b.worker == worker), key=lambda b: b.start))
        covered = _covered(lane.bars, start, now)
        lane.busy_share = _busy(lane.bars, covered, span)
        edge, min_gap = start, span * GAP_SHARE
        for s, e in covered + [(now, now)]:
            if s - edge >= min_gap and edge > start:  # before the first bar the worker may not have existed
                lane.gaps.append(Gap(edge, s))
            edge = max(edge, e)
        lanes.append(lane)
    finalize = [b for b in bars if b.phase == "finalize"]
    # Aggregated, the finalizers are one lane of buckets (their busy share may pass 100%: a pool).
    packs = [sorted(finalize, key=lambda b: b.start)] if aggregated else _pack_finalizers(finalize)
    for n, packed in enumerate(packs, start=1):
        lane = Lane(key=f"{FINALIZER_LANE}-{n}", label=f"finalize {n}", kind="finalizer", bars=packed)
        lane.busy_share = _busy(packed, _covered(packed, start, now), span)
        lanes.append(lane)
    for lane in lanes:
        items: list[Bar | Gap] = [*lane.bars, *lane.gaps]
        for item in items:
            _place(item, start, span)
    return Timeline(engine_id=engine_id, window=window, start=start, end=now, lanes=lanes, ticks=_ticks(start, span),
                    aggregated=aggregated)
