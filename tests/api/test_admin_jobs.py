"""Job history in the admin: full ids, filters, search, inline runs, requeue/cancel/download actions."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from gpu_engine.models import EngineHost, JobStatus, PartitionRun, ProofJob

CHANGELIST = "/admin/gpu_engine/proofjob/"
LONG_ID = "ps-snap-1000-42-7-with-a-rather-long-suffix-to-check-nothing-is-cut"


@pytest.fixture
def admin_client(client, db):
    client.force_login(get_user_model().objects.create_superuser("root", "r@example.invalid", "pw-test-only"))
    return client


@pytest.fixture
def jobs(db):
    now = timezone.now()
    failed = ProofJob.objects.create(job_id="failed-porep-1", proof_kind="porep-c2", status=JobStatus.FAILED,
                                     error="verify failed", started_at=now - timedelta(seconds=5), finished_at=now,
                                     claimed_by="host-a", attempts=3)
    queued = ProofJob.objects.create(job_id="queued-wpost-1", proof_kind="window-post")
    done = ProofJob.objects.create(job_id=LONG_ID, proof_kind="snap-update", status=JobStatus.DONE,
                                   started_at=now - timedelta(seconds=90), finished_at=now, claimed_by="host-b",
                                   bundle={"kind": "snap-update", "proofs": [1, 2]}, verified=True)
    PartitionRun.objects.create(job=done, index=3, state="failed", gpu_ms=12.5, worker_id="0", engine_id="host-b",
                                error="launch timeout")
    return {"failed": failed, "queued": queued, "done": done}


def _action(client, action: str, *jobs: ProofJob):
    return client.post(CHANGELIST, {"action": action, "_selected_action": [j.pk for j in jobs]})


def test_changelist_shows_full_ids_labels_engine_duration(admin_client, jobs):
    body = admin_client.get(CHANGELIST).content.decode()
    assert f'title="{LONG_ID}">{LONG_ID}</span>' in body
    assert "SnapDeals Update (ReplicaUpdate)" in body and "host-b" in body and "1m 30s" in body


@pytest.mark.parametrize("query,present,absent", [
    ("?proof_kind__exact=window-post", "queued-wpost-1", "failed-porep-1"),
    ("?status__exact=failed", "failed-porep-1", "queued-wpost-1"),
    ("?claimed_by=host-b", LONG_ID, "failed-porep-1"),
    ("?q=42-7", LONG_ID, "queued-wpost-1"),
])
def test_filters_and_search(admin_client, jobs, query, present, absent):
    body = admin_client.get(CHANGELIST + query).content.decode()
    assert present in body and f">{absent}<" not in body


def test_change_page_has_partition_runs_and_bundle_link(admin_client, jobs):
    done = jobs["done"]
    body = admin_client.get(f"{CHANGELIST}{done.pk}/change/").content.decode()
    assert "launch timeout" in body and "12.5" in body
    assert f"/admin/gpu_engine/proofjob/{done.pk}/bundle/" in body
    response = admin_client.get(f"{CHANGELIST}{done.pk}/bundle/")
    assert json.loads(response.content) == done.bundle
    assert response["Content-Disposition"].startswith("attachment")
    assert admin_client.get(f"{CHANGELIST}{jobs['queued'].pk}/bundle/").status_code == 404


def test_requeue_failed_only(admin_client, jobs):
    _action(admin_client, "requeue_failed", jobs["failed"], jobs["done"])
    failed, done = ProofJob.objects.get(pk=jobs["failed"].pk), ProofJob.objects.get(pk=jobs["done"].pk)
    assert failed.status == JobStatus.QUEUED and failed.error == "" and failed.attempts == 0
    assert failed.claimed_by == "" and failed.finished_at is None
    assert done.status == JobStatus.DONE and done.bundle is not None


def test_cancel_queued_only(admin_client, jobs):
    _action(admin_client, "cancel_queued", jobs["queued"], jobs["failed"])
    assert ProofJob.objects.get(pk=jobs["queued"].pk).status == JobStatus.CANCELLED
    assert ProofJob.objects.get(pk=jobs["failed"].pk).status == JobStatus.FAILED


def test_download_bundles(admin_client, jobs):
    one = _action(admin_client, "download_bundles", jobs["done"])
    assert json.loads(one.content) == jobs["done"].bundle
    none = _action(admin_client, "download_bundles", jobs["queued"])
    assert none.status_code == 302  # back to the list with a warning


def test_engine_host_admin(admin_client, db):
    now = timezone.now()
    EngineHost.objects.create(engine_id="host-a-engine", hostname="gpu-box-1", backend="cuda", workers=2,
                              started_at=now, last_heartbeat=now)
    body = admin_client.get("/admin/gpu_engine/enginehost/").content.decode()
    assert "host-a-engine" in body and "gpu-box-1" in body and "icon-yes" in body


@pytest.mark.django_db
def test_admin_requires_staff(client):
    assert client.get(CHANGELIST).status_code == 302
