"""`{% alert_strip %}`: the panel's alert strip on first paint, from the same template the live
alerts frame carries (statuspanel/stream/alerts.py), so a reload and a live update draw the same."""
from __future__ import annotations

import time
from typing import Any

from django import template
from django.urls import reverse
from django.utils.safestring import mark_safe

from statuspanel.alerts.panel import firing_alerts
from statuspanel.stream.alerts import render_strip_body

register = template.Library()


@register.inclusion_tag("statuspanel/alerts/_strip.html", takes_context=True)
def alert_strip(context: template.Context) -> dict[str, Any]:
    alerts = firing_alerts()
    now = time.time()
    return {"body": mark_safe(render_strip_body(alerts, now)),  # rendered with autoescape by its template
            "count": len(alerts), "csrf_token": context.get("csrf_token"),
            "api_base": reverse("api-alerts")}
