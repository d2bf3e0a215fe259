"""The history views: each engine's timeline and charts, compact on the panel and whole on its own page.

Same auth as the panel (a logged-in session). The panel's compact region is refetched by panel.js
when a live frame of that engine arrives (at most every ACTIVITY_REFRESH_SECS), so the timeline
follows the stream while every bar still comes from the stored runs plus the latest snapshot.
"""
from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_GET

from gpu_engine.schema import Snapshot, SnapshotDocument
from gpu_engine import wire
from statuspanel.history import charts
from statuspanel.live import current_snapshots
from statuspanel.render.engine import engine_id_of
from statuspanel.history.timeline import DEFAULT_WINDOW, WINDOWS, build_timeline

ACTIVITY_REFRESH_SECS = 2.0


def engine_snapshot(engine_id: str) -> Snapshot | None:
    """The latest live snapshot of `engine_id` (None when it is offline: stored bars only)."""
    live, _ = current_snapshots()
    return next((s for s in live if engine_id_of(s) == engine_id), None)


def _engine_id(engine_id: str) -> str:
    try:
        return wire.validate_engine_id(engine_id)
    except ValueError:
        raise Http404("no such engine") from None


def activity_context(engine_id: str, snap: SnapshotDocument | None, window: str = DEFAULT_WINDOW) -> dict[str, Any]:
    """The compact region: the timeline over `window` and the last hour's charts."""
    return {"engine_id": engine_id, "tl": build_timeline(snap, engine_id, window),
            "windows": list(WINDOWS), "throughput": charts.throughput(engine_id),
            "latency": charts.latency(engine_id, charts.RANGES["1h"]),
            "telemetry": charts.telemetry(engine_id, charts.RANGES["1h"]), "compact": True}


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
    return render(request, "statuspanel/activity/_activity.html",
                  {"a": activity_context(engine_id, engine_snapshot(engine_id), window)})


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
    context = {
        "engine_id": engine_id, "online": snap is not None, "range": span, "ranges": list(charts.RANGES),
        "a": {"engine_id": engine_id, "tl": build_timeline(snap, engine_id, "60m"), "windows": [],
              "throughput": charts.throughput(engine_id, minutes=int(secs // 60)),
              "latency": charts.latency(engine_id, secs), "telemetry": charts.telemetry(engine_id, secs),
              "compact": False},
    }
    return render(request, "statuspanel/history.html", context)
