"""Liveness and the local engine's status as JSON."""
from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from gpu_engine import runtime
from statuspanel.api.responses import error, methods
from statuspanel.auth import status_auth_required


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    from statuspanel.fleet.serving import current_collector

    collector = current_collector()
    return JsonResponse({"ok": True, "engine_running": runtime.local_tracker() is not None,
                         "fleet_collector": collector is not None and collector.running})


@status_auth_required
@methods("GET")  # a wrong method is answered in JSON like the rest of the API
def api_status(request: HttpRequest) -> JsonResponse:
    snap = runtime.local_snapshot()
    if snap is None:
        return error("no engine is running in this process", 503)
    return JsonResponse(snap)
