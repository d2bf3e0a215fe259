"""The history views: each engine's timeline and charts, compact on the panel and whole on its own page.

Same auth as the panel (a logged-in session). The panel's compact region is refetched by panel.js
when a live frame of that engine arrives (never while its previous fetch is on its way, and backing
off by that fetch's time), so the timeline follows the stream while every bar still comes from the
stored runs plus the latest snapshot. Every open panel asks for the same region: it is built at most
once per ACTIVITY_CACHE_SECS per (engine, window) and shared through Django's cache.
"""
from __future__ import annotations

import math
import time
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET

from gpu_engine import wire
from gpu_engine.schema import Snapshot, SnapshotDocument
from statuspanel.fleet import cost
from statuspanel.history import charts
from statuspanel.history import fleet as fleet_history
from statuspanel.history.timeline import DEFAULT_WINDOW, WINDOWS, build_timeline
from statuspanel.live import current_snapshots
from statuspanel.render.cost import cost_rows
from statuspanel.render.engine import engine_id_of

ACTIVITY_REFRESH_SECS = 2.0
ACTIVITY_CACHE_SECS = 1  # whole seconds: Django's Redis cache keeps no shorter timeout
# A region slower to build is kept longer: this many times its build time (never rebuilt faster than
# it can be built, however many panels ask).
ACTIVITY_CACHE_BUILDS = 2


def engine_snapshot(engine_id: str) -> Snapshot | None:
    """The latest live snapshot of `engine_id` (None when it is offline: stored bars only)."""
    live, _ = current_snapshots()
    return next((s for s in live if engine_id_of(s) == engine_id), None)


def _engine_id(engine_id: str) -> str:
    try:
        return wire.validate_engine_id(engine_id)
    except ValueError:
        raise Http404("no such engine") from None


def live_queue_depth(snap: SnapshotDocument | None) -> int | None:
    """The queue depth of the engine's latest snapshot (the queue chart's "now")."""
    counters = (snap or {}).get("counters")
    depth = counters.get("queue_depth") if isinstance(counters, dict) else None
    return depth if isinstance(depth, int) and not isinstance(depth, bool) else None


def activity_context(engine_id: str, snap: SnapshotDocument | None, window: str = DEFAULT_WINDOW) -> dict[str, Any]:
    """The compact region: the timeline over `window` and the last hour's charts."""
    if fleet_history.is_fleet_engine(engine_id):
        return {"engine_id": engine_id, "tl": fleet_history.build_fleet_timeline(engine_id, window),
                "windows": list(WINDOWS), "throughput": fleet_history.fleet_throughput(engine_id),
                "latency": fleet_history.fleet_latency(engine_id, charts.RANGES["1h"]),
                "telemetry": fleet_history.fleet_telemetry(engine_id, charts.RANGES["1h"]), "compact": True,
                "observed": True}
    return {"engine_id": engine_id, "tl": build_timeline(snap, engine_id, window),
            "windows": list(WINDOWS), "throughput": charts.throughput(engine_id),
            "latency": charts.latency(engine_id, charts.RANGES["1h"]),
            "telemetry": charts.telemetry(engine_id, charts.RANGES["1h"], live_queue=live_queue_depth(snap)),
            "compact": True}


def _choice(request: HttpRequest, name: str, allowed: dict[str, Any], default: str) -> str | None:
    value = request.GET.get(name, default)
    return value if value in allowed else None


@require_GET
@login_required
def activity_partial(request: HttpRequest, engine_id: str) -> HttpResponse:
    engine_id = _engine_id(engine_id)
    window = _choice(request, "window", WINDOWS, DEFAULT_WINDOW)
    if window is None:
        return HttpResponseBadRequest(f"window must be one of {', '.join(WINDOWS)}", content_type="text/plain")
    snap_context = {"engine_id": engine_id}
    # panel.js fetches the fragment; a browser opening the address itself gets it inside the page.
    if request.headers.get("Sec-Fetch-Mode") == "navigate":
        return render(request, "statuspanel/activity_page.html",
                      {"a": activity_context(engine_id, engine_snapshot(engine_id), window), **snap_context})
    key = f"vastmanager:activity:{engine_id}:{window}"
    html = cache.get(key)
    if html is None:
        began = time.monotonic()
        html = render_to_string("statuspanel/activity/_activity.html",
                                {"a": activity_context(engine_id, engine_snapshot(engine_id), window),
                                 **snap_context})
        built = time.monotonic() - began
        cache.set(key, html, max(ACTIVITY_CACHE_SECS, math.ceil(ACTIVITY_CACHE_BUILDS * built)))
    return HttpResponse(html)


@require_GET
@login_required
def history_page(request: HttpRequest, engine_id: str) -> HttpResponse:
    """`/history/<engine_id>?range=1h|24h`: the 60-minute timeline and every chart over the range."""
    engine_id = _engine_id(engine_id)
    span = _choice(request, "range", charts.RANGES, "1h")
    if span is None:
        return HttpResponseBadRequest(f"range must be one of {', '.join(charts.RANGES)}", content_type="text/plain")
    secs = charts.RANGES[span]
    snap = engine_snapshot(engine_id)
    if fleet_history.is_fleet_engine(engine_id):
        activity = {"engine_id": engine_id, "tl": fleet_history.build_fleet_timeline(engine_id, "60m"),
                    "windows": [], "throughput": fleet_history.fleet_throughput(engine_id, minutes=int(secs // 60)),
                    "latency": fleet_history.fleet_latency(engine_id, secs),
                    "telemetry": fleet_history.fleet_telemetry(engine_id, secs), "compact": False, "observed": True}
    else:
        activity = {"engine_id": engine_id, "tl": build_timeline(snap, engine_id, "60m"), "windows": [],
                    "throughput": charts.throughput(engine_id, minutes=int(secs // 60)),
                    "latency": charts.latency(engine_id, secs),
                    "telemetry": charts.telemetry(engine_id, secs, live_queue=live_queue_depth(snap)),
                    "compact": False}
    report = cost.report()
    context = {
        "engine_id": engine_id, "online": snap is not None, "range": span, "ranges": list(charts.RANGES),
        "a": activity, "cost": cost_rows(report, engine_id), "currency": report["currency"],
    }
    return render(request, "statuspanel/history.html", context)
