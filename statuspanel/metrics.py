"""`/metrics`: the Prometheus exposition of every live engine, built at scrape time.

A custom collector (no process-global metric objects) builds every series from the latest
snapshots (wire.latest_snapshots, plus this process's engine) and a few database rows (the
outcome and duration tallies, gpu_engine/tallies.py), so an engine or worker that is gone leaves
no series behind and the counters survive restarts. Names follow Prometheus conventions under the
`vastmanager_` prefix; labels `engine` and `kind`. Every label value is a series, and a fleet
source's snapshot is remote data: worker states and proof kinds are folded into the known
vocabulary (anything else is `other`), GPU names cut to 64 characters, and the per-worker and
per-GPU series of one engine held to METRICS_MAX_SERIES_PER_ENGINE; what that leaves out is
counted in `vastmanager_metrics_series_dropped`. Auth: the operator's bearer token, the
read-only status token where one is configured, a logged-in session, or none with METRICS_PUBLIC.
"""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from gpu_engine import tallies
from gpu_engine.models import DurationTally, JobStatus, OutcomeTally
from gpu_engine.schema import Snapshot, conforms
from gpu_engine.validation import valid_kinds
from gpu_engine.vocabulary import PHASES, WORKER_STATES
from statuspanel.alerts.metrics import alert_metrics
from statuspanel.auth import _unauthorized, bearer_token, can_read_status
from statuspanel.fleet.vocabulary import SOURCE_ONLINE
from statuspanel.live import current_snapshots
from statuspanel.render.engine import engine_id_of
from statuspanel.render.numbers import num

P = "vastmanager_"
_OUTCOMES: dict[str, str] = {JobStatus.DONE: "completed", JobStatus.FAILED: "failed", JobStatus.CANCELLED: "cancelled"}
OTHER = "other"                 # the label value of any state or kind outside the known vocabulary
LABEL_MAX_CHARS = 64            # free text from remote data (GPU names) is cut to this
DEFAULT_MAX_SERIES_PER_ENGINE = 1000


def fold(value: Any, known: frozenset[str] | set[str]) -> str:
    """A label value from remote data: itself when it is a known word, else `other`."""
    text = str(value or "")
    return text if text in known else OTHER


def _known_kinds() -> frozenset[str]:
    try:
        return frozenset(valid_kinds(circuits=True))
    except DatabaseError:  # the circuit table unreadable: the built-in kinds still name themselves
        return frozenset(valid_kinds())


def _snapshots() -> list[Snapshot]:
    return current_snapshots()[0]


class SnapshotCollector:
    """Collects one scrape: live series from `snapshots()`, counters and histograms from the tallies."""

    def __init__(self, snapshots: Callable[[], list[Snapshot]] = _snapshots,
                 clock: Callable[[], float] = time.time, max_series_per_engine: int | None = None) -> None:
        self.snapshots, self.clock = snapshots, clock
        if max_series_per_engine is None:
            max_series_per_engine = int(getattr(settings, "METRICS_MAX_SERIES_PER_ENGINE",
                                                DEFAULT_MAX_SERIES_PER_ENGINE))
        self.max_series = max_series_per_engine

    def collect(self) -> Iterator[Metric]:
        snaps = self.snapshots()
        yield from self._live(snaps)
        yield from self._outcomes()
        yield from self._durations()
        yield from self._cost(snaps)
        yield from alert_metrics()

    def _live(self, snaps: list[Snapshot]) -> Iterator[Metric]:  # noqa: C901 - one pass over each snapshot fills every live family
        now = self.clock()
        up = GaugeMetricFamily(P + "engine_up", "1 for every engine whose snapshot is live", labels=["engine"])
        hb = GaugeMetricFamily(P + "publisher_heartbeat_age_seconds",
                               "Seconds since the engine's last published snapshot", labels=["engine"])
        workers = GaugeMetricFamily(P + "workers", "GPU workers by state", labels=["engine", "state"])
        wstate = GaugeMetricFamily(P + "worker_state", "1 for the state each GPU worker is in (0 for the others)",
                                   labels=["engine", "worker", "gpu", "state"])
        wbusy = GaugeMetricFamily(P + "worker_busy_seconds", "Seconds in the worker's current assignment",
                                  labels=["engine", "worker", "gpu"])
        parts = GaugeMetricFamily(P + "partitions", "Partitions in the live view by phase and kind",
                                  labels=["engine", "kind", "phase"])
        queue = GaugeMetricFamily(P + "queue_depth", "Jobs waiting in the durable queue", labels=["engine"])
        mem_used = GaugeMetricFamily(P + "memory_budget_used_bytes", "Memory budget reserved by partitions",
                                     labels=["engine"])
        mem_total = GaugeMetricFamily(P + "memory_budget_total_bytes", "Memory budget of the engine", labels=["engine"])
        synth = GaugeMetricFamily(P + "synthesis_active", "Partitions synthesizing now", labels=["engine"])
        gpu_labels = ["engine", "gpu", "name"]
        g_util = GaugeMetricFamily(P + "gpu_utilization_ratio", "GPU utilisation (NVML), 0..1", labels=gpu_labels)
        g_used = GaugeMetricFamily(P + "gpu_memory_used_bytes", "GPU memory in use (NVML)", labels=gpu_labels)
        g_total = GaugeMetricFamily(P + "gpu_memory_total_bytes", "GPU memory (NVML)", labels=gpu_labels)
        g_temp = GaugeMetricFamily(P + "gpu_temperature_celsius", "GPU temperature (NVML)", labels=gpu_labels)
        g_power = GaugeMetricFamily(P + "gpu_power_watts", "GPU power draw (NVML)", labels=gpu_labels)
        src_labels = ["engine", "source_kind", "transport"]
        s_up = GaugeMetricFamily(P + "source_up", "1 when the fleet source's last poll succeeded", labels=src_labels)
        s_age = GaugeMetricFamily(P + "source_last_poll_age_seconds", "Seconds since the source's last good poll",
                                  labels=src_labels)
        s_lat = GaugeMetricFamily(P + "source_poll_latency_seconds", "Duration of the source's last poll",
                                  labels=src_labels)
        dropped = GaugeMetricFamily(P + "metrics_series_dropped",
                                    "Per-worker and per-GPU series of the engine left out of this scrape "
                                    "(over METRICS_MAX_SERIES_PER_ENGINE)", labels=["engine"])
        kinds = _known_kinds()
        states = frozenset(WORKER_STATES)
        nonconforming = GaugeMetricFamily(P + "snapshot_nonconforming",
                                          "1 for an engine whose cached snapshot lacks keys the schema requires "
                                          "(its other series are left out)", labels=["engine"])
        for snap in snaps:
            e = engine_id_of(snap)
            budget, left_out = self.max_series, 0
            up.add_metric([e], 1)
            published = snap.get("published_at")
            if published is not None:
                hb.add_metric([e], max(0.0, now - published))
            # Every snapshot here is ours or the fleet adapter's (which checked each field's type), so
            # the snapshot's types hold: only the values the schema allows to be null are checked. A
            # document that lacks a required key (written into the cache by something else) is skipped
            # and counted, never a failed scrape.
            if not conforms(snap):
                nonconforming.add_metric([e], 1)
                continue
            by_state: Counter[str] = Counter({s: 0 for s in WORKER_STATES})
            for w in snap["gpu_workers"]:
                state, wid, gpu = fold(w["state"], states), str(w["worker_id"]), str(w["gpu_ordinal"])
                by_state[state] += 1
                labels_of_state = sorted(states | {state})
                cost = len(labels_of_state) + 1
                if cost > budget:
                    left_out += cost
                    continue
                budget -= cost
                for s in labels_of_state:
                    wstate.add_metric([e, wid[:LABEL_MAX_CHARS], gpu[:LABEL_MAX_CHARS], s], 1 if s == state else 0)
                wbusy.add_metric([e, wid[:LABEL_MAX_CHARS], gpu[:LABEL_MAX_CHARS]], w["busy_secs"])
            for state, n in sorted(by_state.items()):
                workers.add_metric([e, state], n)
            phase_counts: Counter[tuple[str, str]] = Counter()
            for pipe in snap["pipelines"]:
                kind = fold(pipe["proof_kind"], kinds)
                for part in pipe["partitions"]:
                    phase_counts[(kind, part["state"])] += 1
            for kind in sorted({k for k, _ in phase_counts}):
                for phase in PHASES:
                    parts.add_metric([e, kind, phase], phase_counts.get((kind, phase), 0))
            queue.add_metric([e], snap["counters"]["queue_depth"])
            mem_used.add_metric([e], snap["memory"]["used_bytes"])
            mem_total.add_metric([e], snap["memory"]["total_bytes"])
            synth.add_metric([e], snap["synthesis"]["active"])
            for g in snap["gpus"]:
                labels = [e, str(g["ordinal"])[:LABEL_MAX_CHARS], (g["name"] or "")[:LABEL_MAX_CHARS]]
                readings = [(fam, value, scale) for fam, value, scale in (
                    (g_util, g["util_pct"], 0.01), (g_used, g["mem_used_bytes"], 1), (g_total, g["mem_total_bytes"], 1),
                    (g_temp, g["temp_c"], 1), (g_power, g["power_w"], 1)) if value is not None]
                if len(readings) > budget:
                    left_out += len(readings)
                    continue
                budget -= len(readings)
                for fam, value, scale in readings:
                    fam.add_metric(labels, float(value) * scale)
            source = snap.get("source")
            if isinstance(source, dict):  # a fleet-collected engine: how its poll went
                labels = [e, str(source.get("kind") or ""), str(source.get("transport") or "")]
                s_up.add_metric(labels, 1 if source.get("state") == SOURCE_ONLINE else 0)
                if num(source.get("last_ok_secs_ago")) is not None:
                    s_age.add_metric(labels, source["last_ok_secs_ago"])
                if num(source.get("poll_ms")) is not None:
                    s_lat.add_metric(labels, source["poll_ms"] / 1000.0)
            dropped.add_metric([e], left_out)
        yield from (up, hb, workers, wstate, wbusy, parts, queue, mem_used, mem_total, synth,
                    g_util, g_used, g_total, g_temp, g_power, s_up, s_age, s_lat, dropped, nonconforming)

    def _outcomes(self) -> Iterator[Metric]:
        families = {status: CounterMetricFamily(P + f"jobs_{name}", f"Jobs {name} (from the database)",
                                                labels=["engine", "kind"])
                    for status, name in _OUTCOMES.items()}
        for engine, kind, outcome, count in OutcomeTally.objects.order_by("engine_id", "proof_kind").values_list(
                "engine_id", "proof_kind", "outcome", "count"):
            if outcome in families:
                families[outcome].add_metric([engine, kind], count)
        yield from families.values()

    def _durations(self) -> Iterator[Metric]:
        fam = HistogramMetricFamily(P + "phase_duration_seconds",
                                    "Durations of proven partitions' phases (synthesis, gpu, finalize) and of done "
                                    "jobs (phase=job), from the database", labels=["engine", "kind", "phase"])
        wait = HistogramMetricFamily(P + "queue_wait_seconds",
                                     "Time jobs waited in the queue, submitted to claimed (one observation per "
                                     "claim), from the database", labels=["engine", "kind"])
        for row in DurationTally.objects.order_by("engine_id", "proof_kind", "phase"):
            if row.phase == tallies.PHASE_QUEUE:
                wait.add_metric([row.engine_id, row.proof_kind], tallies.cumulative(row.buckets or []), row.sum_secs)
                continue
            fam.add_metric([row.engine_id, row.proof_kind, row.phase], tallies.cumulative(row.buckets or []),
                           row.sum_secs)
        yield fam
        yield wait


    def _cost(self, snaps: list[Snapshot]) -> Iterator[Metric]:
        """Prices and the cost report's answers (statuspanel/fleet/cost.py), the panel's own numbers."""
        from statuspanel.fleet import cost

        local = [engine_id_of(s) for s in snaps if not isinstance(s.get("source"), dict)]
        rep = cost.report(local)
        cur = rep["currency"]
        price = GaugeMetricFamily(P + "engine_cost_per_hour", f"Hourly price of the engine's box ({cur})",
                                  labels=["engine"])
        wl = ["engine", "window"]
        busy = GaugeMetricFamily(P + "engine_busy_ratio", "GPU-seconds busy over GPU-seconds watched in the window",
                                 labels=wl)
        watched = GaugeMetricFamily(P + "engine_watched_seconds", "Seconds the engine was watched in the window",
                                    labels=wl)
        spent = GaugeMetricFamily(P + "engine_cost", f"Money spent on the box in the window ({cur})", labels=wl)
        idle = GaugeMetricFamily(P + "engine_idle_cost", f"Money spent on idle GPU time in the window ({cur})",
                                 labels=wl)
        per = GaugeMetricFamily(P + "engine_cost_per_proof", f"Cost per proof by kind in the window ({cur})",
                                labels=["engine", "kind", "window"])
        kinds = _known_kinds()
        for engine, windows in sorted(rep["boxes"].items()):
            for window, box in windows.items():
                if window == next(iter(windows)) and box["price_per_hour"] is not None:
                    price.add_metric([engine], box["price_per_hour"])
                watched.add_metric([engine, window], box["watched_hours"] * 3600)
                if box["busy_share"] is not None:
                    busy.add_metric([engine, window], box["busy_share"])
                if box["spent"] is not None:
                    spent.add_metric([engine, window], box["spent"])
                if box["idle_cost"] is not None:
                    idle.add_metric([engine, window], box["idle_cost"])
                folded: Counter[str] = Counter()
                for kind, value in box["cost_per_proof"].items():
                    folded[fold(kind, kinds)] = max(folded[fold(kind, kinds)], value)
                for kind, value in sorted(folded.items()):
                    per.add_metric([engine, kind, window], value)
        yield from (price, busy, watched, spent, idle, per)


def scrape() -> bytes:
    """One scrape in the text exposition format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector())
    return generate_latest(registry)


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not getattr(settings, "METRICS_PUBLIC", False):
        token = bearer_token(request)
        if token is not None and not can_read_status(token):
            return _unauthorized("invalid token")
        if token is None and not request.user.is_authenticated:
            return _unauthorized("authentication required: send 'Authorization: Bearer <token>'")
    return HttpResponse(scrape(), content_type=CONTENT_TYPE_LATEST)
