from __future__ import annotations

from django.urls import path

from statuspanel import api, auth, health, views

urlpatterns = [
    path("", views.panel, name="panel"),
    path("panel/history", views.history_partial, name="panel-history"),
    path("healthz", health.healthz, name="healthz"),
    path("api/status", health.api_status, name="api-status"),
    path("login", auth.token_login, name="token-login"),
    path("api/jobs", api.jobs, name="api-jobs"),
    path("api/jobs/<str:job_id>", api.job_detail, name="api-job"),
    path("api/jobs/<str:job_id>/proof", api.job_proof, name="api-job-proof"),
    path("api/jobs/<str:job_id>/cancel", api.job_cancel, name="api-job-cancel"),
]
