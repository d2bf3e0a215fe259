"""The panel page: whole on first paint, built from the same cached partials the WebSocket sends."""
from __future__ import annotations

import time

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from gpu_engine.models import FINAL_STATUSES, ProofJob
from statuspanel.history.timeline import DEFAULT_WINDOW, WINDOWS
from statuspanel.history.views import activity_context
from statuspanel.live import current_snapshots
from statuspanel.render.engine import engine_id_of, fleet_summary_of, render_engine_with_tally
from statuspanel.render.fleet import COLLAPSE_OVER, is_fleet_source

WS_PATH = "/ws/status/"
HISTORY_ROWS = 15


def finished_jobs(limit: int = HISTORY_ROWS) -> list[ProofJob]:
    return list(
        ProofJob.objects.filter(status__in=FINAL_STATUSES, finished_at__isnull=False)
        .defer("bundle")
        .order_by("-finished_at")[:limit]
    )


def _history_url() -> str:
    return reverse("admin:gpu_engine_proofjob_changelist")


@require_GET
@login_required
def panel(request: HttpRequest) -> HttpResponse:
    live, gone = current_snapshots()
    window = request.GET.get("window", DEFAULT_WINDOW)
    window = window if window in WINDOWS else DEFAULT_WINDOW
    # Many engines: the page starts with each one collapsed to its summary row, and the activity
    # regions (timeline and charts: queries per engine) are fetched only for engines opened.
    collapsed = len(live) + len(gone) > COLLAPSE_OVER
    rendered = [render_engine_with_tally(s) for s in live]  # cached: the summary below reuses them
    engines = []
    for snap, (html, _) in zip(live, rendered):
        engine_id = engine_id_of(snap)
        show_activity = not collapsed and not is_fleet_source(snap)
        engines.append({"engine_id": engine_id, "html": html,
                        "activity": activity_context(engine_id, snap, window) if show_activity else None})
    context = {
        "engines": engines,
        "fleet": fleet_summary_of(live, offline=len(gone)),
        "collapsed": collapsed,
        "collapse_over": COLLAPSE_OVER,
        "offline": gone,
        "finished": finished_jobs(),
        "history_url": _history_url(),
        "ws_path": WS_PATH,
        "server_now": f"{time.time():.3f}",
    }
    return render(request, "statuspanel/panel.html", context)


@require_GET
@login_required
def history_partial(request: HttpRequest) -> HttpResponse:
    """The last-finished-jobs region alone, refetched by panel.js when an engine's counters move."""
    return render(request, "statuspanel/_history.html",
                  {"finished": finished_jobs(), "history_url": _history_url()})
