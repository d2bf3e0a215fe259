"""Submitting jobs over the API: stored before acknowledged, idempotent by job id."""
from __future__ import annotations

import json

import pytest

from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.models import ProofJob
from tests.credentials import AUTH


def post(client, body, **extra):
    return client.post("/api/jobs", data=json.dumps(body), content_type="application/json", **AUTH, **extra)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(PROOF_KINDS))
def test_submit_every_kind_is_stored_queued(client, kind):
    response = post(client, {"proof_kind": kind, "job_id": f"job-{kind}"})
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["job_id"] == f"job-{kind}"
    assert data["status"] == "queued"
    assert data["priority"] == PROOF_KINDS[kind].priority
    assert data["total_partitions"] == PROOF_KINDS[kind].partitions
    row = ProofJob.objects.get(job_id=f"job-{kind}")
    assert row.proof_kind == kind and row.status == "queued"


@pytest.mark.django_db
def test_same_job_id_again_returns_the_stored_job(client):
    first = post(client, {"proof_kind": "snap-update", "job_id": "ps-snap-1000-42-7"})
    second = post(client, {"proof_kind": "snap-update", "job_id": "ps-snap-1000-42-7", "priority": 99})
    assert first.status_code == 201
    assert second.status_code == 200
    assert second.json()["job_id"] == "ps-snap-1000-42-7"
    assert second.json()["priority"] == first.json()["priority"]
    assert ProofJob.objects.filter(job_id="ps-snap-1000-42-7").count() == 1


@pytest.mark.django_db
def test_same_job_id_with_another_kind_is_a_conflict(client):
    post(client, {"proof_kind": "snap-update", "job_id": "ps-snap-1000-42-8"})
    response = post(client, {"proof_kind": "porep-c2", "job_id": "ps-snap-1000-42-8"})
    assert response.status_code == 409
    assert "snap-update" in response.json()["error"]


@pytest.mark.django_db
def test_job_id_is_generated_when_absent(client):
    response = post(client, {"proof_kind": "window-post"})
    assert response.status_code == 201
    job_id = response.json()["job_id"]
    assert job_id.startswith("window-post-")
    assert ProofJob.objects.filter(job_id=job_id).exists()


@pytest.mark.django_db
def test_explicit_priority_is_kept(client):
    response = post(client, {"proof_kind": "porep-c2", "job_id": "p1", "priority": 25})
    assert response.json()["priority"] == 25


@pytest.mark.django_db
def test_full_128_character_id_is_kept_whole(client):
    job_id = "ps-snap-" + "9" * 120
    response = post(client, {"proof_kind": "snap-update", "job_id": job_id})
    assert response.status_code == 201
    assert client.get(f"/api/jobs/{job_id}", **AUTH).json()["job_id"] == job_id
