"""The alerts' JSON API for the panel: `GET /api/alerts`, `POST /api/alerts/<id>/acknowledge`,
`POST /api/alerts/<id>/silence` (`{"minutes": N}`). Reading takes what `/api/status` takes; acting
takes a logged-in operator (a session, CSRF applies; or the operator's bearer token), whose user name
is recorded (`api-token` for the token)."""
from __future__ import annotations

import json

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET, require_POST

from statuspanel.alerts import panel
from statuspanel.auth import api_auth_required, status_auth_required

TOKEN_OPERATOR = "api-token"  # who acted, when the operator's bearer token was used instead of a session

MAX_BODY = 4096


@require_GET
@status_auth_required
def alerts(request: HttpRequest) -> JsonResponse:
    pending = request.GET.get("pending") in ("1", "true")
    return JsonResponse({"alerts": panel.firing_alerts(request.GET.get("engine") or None, include_pending=pending)})


def _operator(request: HttpRequest) -> str:
    user = getattr(request, "user", None)
    return user.get_username() if user is not None and user.is_authenticated else TOKEN_OPERATOR


def _act(request: HttpRequest, alert_id: int, action: str) -> JsonResponse:
    who = _operator(request)
    try:
        if action == "acknowledge":
            alert = panel.acknowledge(alert_id, who)
        else:
            if len(request.body) > MAX_BODY:
                return JsonResponse({"error": "request body too large"}, status=413)
            try:
                data = json.loads(request.body or b"{}")
            except (ValueError, UnicodeDecodeError):
                return JsonResponse({"error": "body must be JSON such as {\"minutes\": 30}"}, status=400)
            if not isinstance(data, dict) or "minutes" not in data:
                return JsonResponse({"error": "body must be JSON such as {\"minutes\": 30}"}, status=400)
            alert = panel.silence(alert_id, data["minutes"], who)
    except panel.AlertActionError as exc:
        return JsonResponse({"error": str(exc)}, status=exc.status)
    return JsonResponse({"alert": alert.to_dict()})


@require_POST
@api_auth_required
def acknowledge(request: HttpRequest, alert_id: int) -> JsonResponse:
    return _act(request, alert_id, "acknowledge")


@require_POST
@api_auth_required
def silence(request: HttpRequest, alert_id: int) -> JsonResponse:
    return _act(request, alert_id, "silence")
