"""Per-minute history of fleet engines, kept from successive polls (the FleetMinute rows).

A fleet engine has no database of its own here, only what each poll shows. So each good poll is
folded into the source's open minute: the time since the previous poll counts as observed for
every worker and GPU, and as busy for those proving now (poll resolution: a worker busy between
two polls and idle at both is not seen); the daemon's cumulative counters give proofs completed
and failed by kind as deltas (a counter that goes down, or an uptime that does, is a daemon
restart: what it shows then is what it did since, never a negative delta); partitions seen moving
into `done` are kept with their synthesis and GPU durations. A gap longer than MAX_GAP_POLLS
intervals (the source unreachable) is not observed time.

`observe()` runs on the collector's loop and touches no database: a minute that closes becomes
rows for the writer thread, which writes whatever gathered in one batch (one bulk insert, plus
the outcome and duration tallies behind /metrics) every `flush_secs`, as
statuspanel/fleet/events.py does for state changes.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from gpu_engine.schema import SnapshotDocument
from gpu_engine.vocabulary import DONE, PROVING

log = logging.getLogger(__name__)

MINUTE_SECS = 60.0
MAX_GAP_POLLS = 4          # a longer silence between good polls is not observed time
MIN_GAP_SECS = 5.0
MAX_SPANS = 120            # busy stretches kept per lane and minute (poll resolution caps it anyway)
MAX_PARTITIONS = 2000      # partitions kept per source and minute
FLUSH_SECS = 1.0
ENGINE_LANE = ""


@dataclass
class LaneMinute:
    gpu_ordinal: int | None = None
    observed: float = 0.0
    busy: float = 0.0
    spans: list[list[float]] = field(default_factory=list)

    def add(self, start: float, end: float, busy: bool) -> None:
        """Count [start, end) (seconds from the minute's start) as observed, and busy when `busy`."""
        self.observed += end - start
        if not busy:
            return
        self.busy += end - start
        if self.spans and abs(self.spans[-1][1] - start) < 1e-6:
            self.spans[-1][1] = round(end, 3)
        elif len(self.spans) < MAX_SPANS:
            self.spans.append([round(start, 3), round(end, 3)])


@dataclass
class MinuteRows:
    """One source's minute, as the writer gets it."""

    source: str
    minute: float
    lanes: dict[str, LaneMinute] = field(default_factory=dict)
    completed: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    restarts: int = 0
    partitions: list[list[Any]] = field(default_factory=list)


@dataclass
class _Track:
    last_at: float | None = None
    counters: dict[str, Any] | None = None
    uptime: float | None = None
    parts: dict[tuple[str, int], str] = field(default_factory=dict)
    minutes: dict[float, MinuteRows] = field(default_factory=dict)


UNKNOWN_KIND = "other"     # proofs counted by a daemon that does not say their kind (gRPC without GetMetrics)
_TOTALS = {"completed_by_kind": "total_completed", "failed_by_kind": "total_failed"}


def _counts(counters: dict[str, Any], key: str) -> dict[str, int]:
    """A by-kind count map; the daemon's total under UNKNOWN_KIND where it gives no kinds at all."""
    raw = counters.get(key)
    out = {str(k): int(v) for k, v in raw.items() if isinstance(v, int)} if isinstance(raw, dict) else {}
    total = counters.get(_TOTALS[key])
    if not out and isinstance(total, int) and not isinstance(total, bool) and total > 0:
        out = {UNKNOWN_KIND: total}
    return out


def counter_deltas(before: dict[str, Any] | None, after: dict[str, Any], uptime_before: float | None,
                   uptime_after: float | None) -> tuple[Counter[str], Counter[str], bool]:
    """(completed by kind, failed by kind, restarted) between two polls' counters.

    A restart (any count or the uptime going down) resets the baseline to zero: the counts shown
    after it are what the daemon did since. The first poll (no `before`) is a baseline only."""
    if before is None:
        return Counter(), Counter(), False
    pairs = [(_counts(before, "completed_by_kind"), _counts(after, "completed_by_kind")),
             (_counts(before, "failed_by_kind"), _counts(after, "failed_by_kind"))]
    totals = [(before.get(k), after.get(k)) for k in ("total_completed", "total_failed")]
    restarted = (any(after_k.get(k, 0) < v for b, after_k in pairs for k, v in b.items())
                 or any(isinstance(b, int) and isinstance(a, int) and a < b for b, a in totals)
                 or (uptime_before is not None and uptime_after is not None and uptime_after < uptime_before))
    out = []
    for b, a in pairs:
        out.append(Counter({k: v - (0 if restarted else b.get(k, 0)) for k, v in a.items()
                            if v - (0 if restarted else b.get(k, 0)) > 0}))
    return out[0], out[1], restarted


class FleetHistory:
    """`observe()` on the collector's loop; `start()` / `stop()` run the writer (stop keeps the open minutes)."""

    def __init__(self, write: Callable[[list[MinuteRows]], None] | None = None, *,
                 clock: Callable[[], float] = time.time, minute_secs: float = MINUTE_SECS,
                 flush_secs: float = FLUSH_SECS, max_gap_secs: float | None = None) -> None:
        self._write = write or write_minutes
        self.clock, self.minute_secs, self.flush_secs = clock, minute_secs, flush_secs
        self.max_gap_secs = max_gap_secs  # None: MAX_GAP_POLLS intervals of the source (at least MIN_GAP_SECS)
        self._tracks: dict[str, _Track] = {}
        self._lock = threading.Lock()
        self._pending: list[MinuteRows] = []
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.rows_written = self.batches = self.restarts_seen = 0

    # -- the loop's side ------------------------------------------------------------------------
    def observe(self, name: str, snap: SnapshotDocument, interval_secs: float) -> None:
        """Fold one good poll of `name` into its open minute (and close the minutes before it)."""
        now = self.clock()
        track = self._tracks.setdefault(name, _Track())
        busy = _busy_lanes(snap)
        gap = self.max_gap_secs or max(MAX_GAP_POLLS * interval_secs, MIN_GAP_SECS)
        if track.last_at is not None and 0 < now - track.last_at <= gap:
            self._spread(name, track, track.last_at, now, busy)
        row = self._minute(name, track, now)
        raw_counters = snap.get("counters")
        counters: dict[str, Any] = raw_counters if isinstance(raw_counters, dict) else {}
        uptime = snap.get("uptime_secs") if isinstance(snap.get("uptime_secs"), (int, float)) else None
        done, failed, restarted = counter_deltas(track.counters, counters, track.uptime, uptime)
        row.completed.update(done)
        row.failed.update(failed)
        if restarted:
            row.restarts += 1
            self.restarts_seen += 1
            track.parts.clear()
        track.counters, track.uptime, track.last_at = counters, uptime, now
        self._finished_partitions(track, row, snap, now)
        self._close_before(track, now)

    def forget(self, name: str) -> None:
        """A removed source: its open minutes are dropped, not written."""
        self._tracks.pop(name, None)

    def _minute(self, name: str, track: _Track, t: float) -> MinuteRows:
        start = t - t % self.minute_secs
        row = track.minutes.get(start)
        if row is None:
            row = track.minutes[start] = MinuteRows(name, start)
        return row

    def _spread(self, name: str, track: _Track, t0: float, t1: float, busy: dict[str, tuple[int | None, bool]]) -> None:
        """Count [t0, t1) for every lane, split at minute boundaries."""
        while t0 < t1:
            row = self._minute(name, track, t0)
            end = min(t1, row.minute + self.minute_secs)
            for lane, (ordinal, is_busy) in busy.items():
                acc = row.lanes.setdefault(lane, LaneMinute(gpu_ordinal=ordinal))
                acc.add(t0 - row.minute, end - row.minute, is_busy)
            t0 = end

    def _finished_partitions(self, track: _Track, row: MinuteRows, snap: SnapshotDocument, now: float) -> None:
        seen: dict[tuple[str, int], str] = {}
        for pipe in snap.get("pipelines") or []:
            if not isinstance(pipe, dict):
                continue
            job, kind = str(pipe.get("job_id") or ""), str(pipe.get("proof_kind") or "")
            for part in pipe.get("partitions") or []:
                if not isinstance(part, dict):
                    continue
                key, state = (job, int(part.get("index") or 0)), str(part.get("state") or "")
                seen[key] = state
                before = track.parts.get(key)
                if state == DONE and before is not None and before != DONE and len(row.partitions) < MAX_PARTITIONS:
                    row.partitions.append([kind, _num(part.get("synth_ms")), _num(part.get("gpu_ms")),
                                           round(now - row.minute, 3)])
        track.parts = seen  # bounded by what the daemon shows now

    def _close_before(self, track: _Track, now: float) -> None:
        current = now - now % self.minute_secs
        closed = [track.minutes.pop(m) for m in sorted(track.minutes) if m < current]
        if closed:
            with self._lock:
                self._pending.extend(closed)

    # -- the writer -----------------------------------------------------------------------------
    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self, *, closing: bool = False) -> int:
        """Write what gathered (every open minute too when `closing`); how many minutes were written."""
        with self._lock:
            if closing:
                for track in self._tracks.values():
                    self._pending.extend(track.minutes[m] for m in sorted(track.minutes))
                    track.minutes.clear()
            batch, self._pending = self._pending, []
        if not batch:
            return 0
        try:
            self._write(batch)
        except Exception:  # a batch not kept must not stop the collector
            log.exception("fleet: keeping %d history minutes failed", len(batch))
            return 0
        self.rows_written += len(batch)
        self.batches += 1
        return len(batch)

    def start(self) -> FleetHistory:
        self._thread = threading.Thread(target=self._run, name="fleet-history", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stopping.wait(self.flush_secs):
            self.flush()

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.flush(closing=True)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _busy_lanes(snap: SnapshotDocument) -> dict[str, tuple[int | None, bool]]:
    """{lane: (gpu ordinal, busy now)} for each worker (`w<id>`) and each GPU (`gpu<n>`, busy while any of its
    workers is)."""
    lanes: dict[str, tuple[int | None, bool]] = {}
    gpus: dict[int, bool] = {}
    for w in snap.get("gpu_workers") or []:
        if not isinstance(w, dict) or w.get("worker_id") is None:
            continue
        raw_ordinal = w.get("gpu_ordinal")
        ordinal: int = raw_ordinal if isinstance(raw_ordinal, int) else 0
        busy = w.get("state") == PROVING
        lanes[f"w{w['worker_id']}"[:32]] = (ordinal, busy)
        gpus[ordinal] = gpus.get(ordinal, False) or busy
    for ordinal, busy in gpus.items():
        lanes[f"gpu{ordinal}"] = (ordinal, busy)
    return lanes


# -- the database side (the writer thread) ------------------------------------------------------
def write_minutes(batch: list[MinuteRows]) -> None:
    """One batch: the FleetMinute rows (one bulk insert) and the tallies behind /metrics, for sources that
    still exist (a source removed meanwhile leaves nothing)."""
    from django.db import connection, transaction

    from gpu_engine import tallies
    from gpu_engine.models import JobStatus
    from statuspanel.models import FleetMinute, Source

    known = _known_kinds()
    try:
        existing = set(Source.objects.filter(name__in={m.source for m in batch}).values_list("name", flat=True))
        rows: list[FleetMinute] = []
        outcomes: Counter[tuple[str, str, str]] = Counter()
        durations: list[tuple[str, str, str, float] | None] = []
        for m in batch:
            if m.source not in existing:
                continue
            at = datetime.fromtimestamp(m.minute, timezone.utc)
            by_kind: defaultdict[str, float] = defaultdict(float)
            for kind, _synth, gpu_ms, _end in m.partitions:
                by_kind[kind] += (gpu_ms or 0) / 1000
            rows.append(FleetMinute(source_name=m.source, minute=at, lane=ENGINE_LANE, completed=dict(m.completed),
                                    failed=dict(m.failed), restarts=m.restarts, partitions=m.partitions,
                                    gpu_secs_by_kind={k: round(v, 3) for k, v in by_kind.items()}))
            rows.extend(FleetMinute(source_name=m.source, minute=at, lane=lane, gpu_ordinal=acc.gpu_ordinal,
                                    observed_secs=round(acc.observed, 3), busy_secs=round(acc.busy, 3),
                                    spans=acc.spans) for lane, acc in sorted(m.lanes.items()))
            # Tallies are /metrics label values: a kind outside the known ones is `other` there.
            for kind, n in m.completed.items():
                outcomes[(m.source, _fold(kind, known), JobStatus.DONE)] += n
            for kind, n in m.failed.items():
                outcomes[(m.source, _fold(kind, known), JobStatus.FAILED)] += n
            for raw_kind, synth_ms, gpu_ms, _ in m.partitions:
                kind = _fold(raw_kind, known)
                durations += [(m.source, kind, tallies.PHASE_SYNTHESIS, synth_ms / 1000) if synth_ms is not None
                              else None, (m.source, kind, tallies.PHASE_GPU, gpu_ms / 1000) if gpu_ms is not None
                              else None]
        with transaction.atomic():
            FleetMinute.objects.bulk_create(rows, batch_size=1000)
            _add_outcomes(outcomes)
            _add_durations([d for d in durations if d is not None])
    finally:
        connection.close()


def _add_outcomes(outcomes: Counter[tuple[str, str, str]]) -> None:
    """Add a batch to the OutcomeTally rows in a few queries, whatever its size (gpu_engine/tallies.py adds
    one at a time, which costs 300 queries for a minute of 100 sources). The rows are locked meanwhile."""
    from gpu_engine.models import OutcomeTally

    if not outcomes:
        return
    OutcomeTally.objects.bulk_create([OutcomeTally(engine_id=e, proof_kind=k, outcome=o) for e, k, o in outcomes],
                                     ignore_conflicts=True)
    engines = {e for e, _, _ in outcomes}
    rows = [r for r in OutcomeTally.objects.select_for_update().filter(engine_id__in=engines)
            if (r.engine_id, r.proof_kind, r.outcome) in outcomes]
    for r in rows:
        r.count += outcomes[(r.engine_id, r.proof_kind, r.outcome)]
    OutcomeTally.objects.bulk_update(rows, ["count"], batch_size=500)


def _add_durations(observations: list[tuple[str, str, str, float]]) -> None:
    """The same for the DurationTally histograms (bucketed as gpu_engine/tallies.py does)."""
    from gpu_engine import tallies
    from gpu_engine.models import DurationTally

    grouped: dict[tuple[str, str, str], list[float]] = {}
    for engine, kind, phase, secs in observations:
        if secs is not None and secs >= 0:
            grouped.setdefault((engine, kind, phase), []).append(float(secs))
    if not grouped:
        return
    width = len(tallies.DURATION_BUCKETS) + 1
    DurationTally.objects.bulk_create([DurationTally(engine_id=e, proof_kind=k, phase=p, buckets=[0] * width)
                                       for e, k, p in grouped], ignore_conflicts=True)
    rows = [r for r in DurationTally.objects.select_for_update().filter(engine_id__in={e for e, _, _ in grouped})
            if (r.engine_id, r.proof_kind, r.phase) in grouped]
    for r in rows:
        values = grouped[(r.engine_id, r.proof_kind, r.phase)]
        buckets = list(r.buckets or []) + [0] * max(0, width - len(r.buckets or []))
        for secs in values:
            buckets[tallies.bucket_index(secs)] += 1
        r.buckets, r.count, r.sum_secs = buckets, r.count + len(values), r.sum_secs + sum(values)
    DurationTally.objects.bulk_update(rows, ["buckets", "count", "sum_secs"], batch_size=500)


def _known_kinds() -> frozenset[str]:
    from gpu_engine.validation import valid_kinds

    try:
        return frozenset(valid_kinds(circuits=True))
    except Exception:  # noqa: BLE001 - the circuit table unreadable: the built-in kinds still name themselves
        return frozenset(valid_kinds())


def _fold(kind: str, known: frozenset[str]) -> str:
    return kind if kind in known else "other"


def prune_minutes(days: float, now: datetime | None = None) -> int:
    """Drop minutes older than `days` (the local engines' TELEMETRY_RETENTION_DAYS); how many rows."""
    from django.db import connection

    from statuspanel.models import FleetMinute

    horizon = (now or datetime.now(timezone.utc)) - timedelta(days=days)
    try:
        deleted, _ = FleetMinute.objects.filter(minute__lt=horizon).delete()
        return deleted
    finally:
        connection.close()
