"""Reading jobs back: list with filters and pages, detail, proof, cancel."""
from __future__ import annotations

import pytest
from django.utils import timezone

from gpu_engine import queue
from gpu_engine.models import PartitionRun, ProofJob
from tests.credentials import AUTH


@pytest.mark.django_db
def test_list_filters_by_status_and_kind(client):
    queue.submit_job("porep-c2", "a")
    queue.submit_job("window-post", "b")
    queue.submit_job("window-post", "c")
    ProofJob.objects.filter(job_id="c").update(status="done")
    data = client.get("/api/jobs?kind=window-post", **AUTH).json()
    assert sorted(j["job_id"] for j in data["jobs"]) == ["b", "c"]
    data = client.get("/api/jobs?status=queued&kind=window-post", **AUTH).json()
    assert [j["job_id"] for j in data["jobs"]] == ["b"]
    assert data["total"] == 1


@pytest.mark.django_db
def test_list_pages_newest_first(client):
    for i in range(5):
        queue.submit_job("winning-post", f"w{i}")
    first = client.get("/api/jobs?page_size=2", **AUTH).json()
    assert [j["job_id"] for j in first["jobs"]] == ["w4", "w3"]
    assert first["total"] == 5 and first["has_next"]
    last = client.get("/api/jobs?page_size=2&page=3", **AUTH).json()
    assert [j["job_id"] for j in last["jobs"]] == ["w0"]
    assert not last["has_next"]


@pytest.mark.django_db
def test_detail_includes_partition_runs(client):
    job, _ = queue.submit_job("window-post", "d1")
    PartitionRun.objects.create(job=job, index=0, state="done", synth_ms=1.5, gpu_ms=2.0, finalize_ms=3.0,
                                worker_id="cpu0-w0", gpu_ordinal=0, engine_id="e1")
    data = client.get("/api/jobs/d1", **AUTH).json()
    assert data["status"] == "queued"
    assert data["partition_runs"][0]["worker_id"] == "cpu0-w0"
    assert "bundle" not in data


@pytest.mark.django_db
def test_proof_of_done_job_is_its_bundle(client):
    job, _ = queue.submit_job("window-post", "d2")
    ProofJob.objects.filter(pk=job.pk).update(status="done", bundle={"kind": "window-post", "x": 1}, verified=True,
                                              finished_at=timezone.now())
    response = client.get("/api/jobs/d2/proof", **AUTH)
    assert response.status_code == 200
    assert response.json() == {"kind": "window-post", "x": 1}
    assert client.get("/api/jobs/d2", **AUTH).json()["has_proof"] is True


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["queued", "running"])
def test_cancel_queued_or_running_job(client, status):
    job, _ = queue.submit_job("porep-c2", "c1")
    ProofJob.objects.filter(pk=job.pk).update(status=status)
    response = client.post("/api/jobs/c1/cancel", **AUTH)
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert ProofJob.objects.get(pk=job.pk).status == "cancelled"
    # Cancelling again is harmless.
    assert client.post("/api/jobs/c1/cancel", **AUTH).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["done", "failed"])
def test_cancel_finished_job_is_409(client, status):
    job, _ = queue.submit_job("porep-c2", "c2")
    ProofJob.objects.filter(pk=job.pk).update(status=status)
    response = client.post("/api/jobs/c2/cancel", **AUTH)
    assert response.status_code == 409
    assert f"already {status}" in response.json()["error"]
    assert ProofJob.objects.get(pk=job.pk).status == status


@pytest.mark.django_db
def test_cancelled_job_is_never_claimed():
    queue.submit_job("winning-post", "c3")
    queue.cancel_job("c3")
    assert queue.claim_next("engine-a") is None
