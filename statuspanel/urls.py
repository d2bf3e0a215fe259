from __future__ import annotations

from django.templatetags.static import static
from django.urls import include, path, register_converter
from django.views.generic.base import RedirectView

from gpu_engine.queue import JOB_ID_RE
from statuspanel import auth, metrics, views
from statuspanel.api import fleet as fleet_api
from statuspanel.api import health
from statuspanel.api import jobs as api
from statuspanel.history import views as history


class JobIdConverter:
    """Only ids a job can have reach the views; others are a 404 before any query (PostgreSQL
    refuses a NUL in a query, and a trailing newline is no id)."""

    regex = JOB_ID_RE.pattern

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(JobIdConverter, "jobid")

urlpatterns = [
    path("", views.panel, name="panel"),
    path("panel/history", views.history_partial, name="panel-history"),
    path("panel/activity/<path:engine_id>", history.activity_partial, name="panel-activity"),
    path("history/<path:engine_id>", history.history_page, name="engine-history"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("healthz", health.healthz, name="healthz"),
    # Browsers ask for /favicon.ico whatever the page links; answer with the panel's icon.
    path("favicon.ico", RedirectView.as_view(url=static("statuspanel/favicon.svg"), permanent=True), name="favicon"),
    path("api/status", health.api_status, name="api-status"),
    path("api/fleet", fleet_api.api_fleet, name="api-fleet"),
    path("login", auth.token_login, name="token-login"),
    path("api/jobs", api.jobs, name="api-jobs"),
    path("api/jobs/<jobid:job_id>", api.job_detail, name="api-job"),
    path("api/jobs/<jobid:job_id>/proof", api.job_proof, name="api-job-proof"),
    path("api/jobs/<jobid:job_id>/cancel", api.job_cancel, name="api-job-cancel"),
    path("api/circuits", api.circuits, name="api-circuits"),
    path("api/circuits/<str:name>/vkey", api.circuit_vkey, name="api-circuit-vkey"),
    path("", include("statuspanel.alerts.urls")),
]
