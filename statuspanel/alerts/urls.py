from __future__ import annotations

from django.urls import path

from statuspanel.alerts import api

urlpatterns = [
    path("api/alerts", api.alerts, name="api-alerts"),
    path("api/alerts/<int:alert_id>/acknowledge", api.acknowledge, name="api-alert-acknowledge"),
    path("api/alerts/<int:alert_id>/silence", api.silence, name="api-alert-silence"),
]
