"""Where a job's time went: its queue wait (submitted to claimed) beside its compute time (claimed to
finished) in `GET /api/jobs/<id>`, the admin's job page and list, and a queue-wait histogram by kind
in `/metrics` (one observation per claim, kept in the database), graphed on the Grafana dashboard."""
from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from gpu_engine import queue
from gpu_engine.models import JobStatus, ProofJob
from tests.credentials import AUTH, TOKEN

ROOT = Path(__file__).resolve().parents[2]


def _claimed_after(job_id: str, kind: str, wait: float) -> ProofJob:
    """Submit a job, pretend it was submitted `wait` s ago, claim it."""
    job, _ = queue.submit_job(kind, job_id)
    ProofJob.objects.filter(pk=job.pk).update(submitted_at=timezone.now() - timedelta(seconds=wait))
    claimed = queue.claim_next("engine-q")
    assert claimed is not None and claimed.job_id == job_id
    return claimed


def _histogram(client) -> dict[tuple[str, str, str], float]:
    body = client.get("/metrics", **AUTH).content.decode()
    out = {}
    for family in text_string_to_metric_families(body):
        if family.name == "vastmanager_queue_wait_seconds":
            for s in family.samples:
                out[(s.name, s.labels.get("kind"), s.labels.get("le", ""))] = s.value
    return out


@pytest.mark.django_db
def test_each_claim_adds_its_wait_to_the_histogram_by_kind(client, api_token):
    _claimed_after("q-porep-1", "porep-c2", 7.0)
    _claimed_after("q-porep-2", "porep-c2", 45.0)
    _claimed_after("q-win-1", "winning-post", 0.3)
    h = _histogram(client)
    assert h[("vastmanager_queue_wait_seconds_count", "porep-c2", "")] == 2
    assert h[("vastmanager_queue_wait_seconds_sum", "porep-c2", "")] == pytest.approx(52.0, abs=1.0)
    assert h[("vastmanager_queue_wait_seconds_bucket", "porep-c2", "10.0")] == 1
    assert h[("vastmanager_queue_wait_seconds_bucket", "porep-c2", "60.0")] == 2
    assert h[("vastmanager_queue_wait_seconds_count", "winning-post", "")] == 1
    body = client.get("/metrics", **AUTH).content.decode()
    assert 'phase="queue"' not in body  # its own family, not a phase of the phase histogram


@pytest.mark.django_db
def test_job_detail_says_queue_wait_and_compute(client, api_token):
    job = _claimed_after("q-detail-1", "window-post", 12.0)
    finished = job.claimed_at + timedelta(seconds=3.5)
    ProofJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE, finished_at=finished)
    data = client.get("/api/jobs/q-detail-1", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").json()
    assert data["queue_wait_secs"] == pytest.approx(12.0, abs=0.5)
    assert data["compute_secs"] == pytest.approx(3.5, abs=1e-6)
    queued, _ = queue.submit_job("window-post", "q-detail-queued")
    data = client.get("/api/jobs/q-detail-queued", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").json()
    assert data["queue_wait_secs"] is None and data["compute_secs"] is None


@pytest.mark.django_db
def test_admin_job_page_shows_wait_compute_timings_and_times_to_the_second(client):
    job = _claimed_after("q-admin-1", "porep-c2", 90.0)
    ProofJob.objects.filter(pk=job.pk).update(
        status=JobStatus.DONE, finished_at=job.claimed_at + timedelta(seconds=65),
        timings={"wall_ms": 65000.0, "partitions": 10, "total_gpu_ms": 42123.456789, "mean_gpu_ms": 4212.3456789})
    client.force_login(get_user_model().objects.create_superuser("root", "r@example.invalid", "pw-test-only"))
    page = client.get(f"/admin/gpu_engine/proofjob/{job.pk}/change/").content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    assert "Queue wait: 1m 30s" in text and "Compute: 1m 05s" in text
    assert re.search(r"gpu 42\.1 s 4\.2 s", text), "timings as a table of durations"
    assert "42123.456789" not in page.replace('title="42123.457 ms"', "")
    claimed = timezone.localtime(ProofJob.objects.get(pk=job.pk).claimed_at)
    assert claimed.strftime("%Y-%m-%d %H:%M:%S") in text  # to the second
    listing = client.get("/admin/gpu_engine/proofjob/").content.decode()
    assert "queue wait" in listing.lower() and "1m 30s" in listing


def test_grafana_dashboard_graphs_queue_wait_by_kind():
    dashboard = json.loads((ROOT / "docs" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    waits = [e for e in exprs if "vastmanager_queue_wait_seconds_bucket" in e]
    assert len(waits) == 2 and all("kind" in e and "histogram_quantile" in e for e in waits)
