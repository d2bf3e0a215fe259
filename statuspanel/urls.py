from __future__ import annotations

from django.urls import path

from statuspanel import health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("api/status", health.api_status, name="api-status"),
]
