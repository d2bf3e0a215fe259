"""Every bad request is answered with its status code and a message that says what is wrong."""
from __future__ import annotations

import json

import pytest

from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.models import ProofJob
from tests.credentials import AUTH


def post_raw(client, raw: str | bytes, path: str = "/api/jobs"):
    return client.post(path, data=raw, content_type="application/json", **AUTH)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"proof_kind": "porep-c3"}, "unknown proof kind 'porep-c3'"),
        ({"proof_kind": 7}, "proof_kind must be a string"),
        ({}, "proof_kind is required"),
        ({"proof_kind": "porep-c2", "job_id": "x" * 129}, "129 characters long; the limit is 128"),
        ({"proof_kind": "porep-c2", "job_id": ""}, "must not be empty"),
        ({"proof_kind": "porep-c2", "job_id": "has space"}, "may contain only"),
        ({"proof_kind": "porep-c2", "job_id": "a/b"}, "may contain only"),
        ({"proof_kind": "porep-c2", "job_id": 5}, "job_id must be a string"),
        ({"proof_kind": "porep-c2", "priority": "high"}, "priority must be an integer"),
        ({"proof_kind": "porep-c2", "priority": True}, "priority must be an integer"),
        ({"proof_kind": "porep-c2", "priority": 10**6}, "between -1000 and 1000"),
        ({"proof_kind": "porep-c2", "colour": "red"}, "unknown field(s): colour"),
    ],
)
def test_bad_submission_is_400_with_message(client, body, fragment):
    response = post_raw(client, json.dumps(body))
    assert response.status_code == 400
    assert fragment in response.json()["error"]
    assert ProofJob.objects.count() == 0


@pytest.mark.django_db
def test_unknown_kind_message_lists_the_kinds(client):
    message = post_raw(client, json.dumps({"proof_kind": "nope"})).json()["error"]
    for kind in PROOF_KINDS:
        assert kind in message


@pytest.mark.django_db
@pytest.mark.parametrize(
    "raw, fragment",
    [
        ('{"proof_kind": ', "malformed JSON"),
        ("[1, 2]", "must be a JSON object"),
        ("", "must be a JSON object"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_malformed_body_is_400(client, raw, fragment):
    response = post_raw(client, raw)
    assert response.status_code == 400
    assert fragment in response.json()["error"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query, fragment",
    [
        ("status=sleeping", "unknown status 'sleeping'; valid statuses: queued, running, done, failed, cancelled"),
        ("kind=fast", "unknown proof kind 'fast'"),
        ("page=0", "page must be between 1"),
        ("page=two", "page must be a positive integer"),
        ("page_size=501", "page_size must be between 1 and 500"),
    ],
)
def test_bad_list_filters_are_400(client, query, fragment):
    response = client.get(f"/api/jobs?{query}", **AUTH)
    assert response.status_code == 400
    assert fragment in response.json()["error"]


@pytest.mark.django_db
@pytest.mark.parametrize("suffix", ["", "/proof"])
def test_unknown_job_is_404(client, suffix):
    response = client.get(f"/api/jobs/no-such-job{suffix}", **AUTH)
    assert response.status_code == 404
    assert response.json()["error"] == "no job with id 'no-such-job'"


@pytest.mark.django_db
def test_cancel_unknown_job_is_404(client):
    response = client.post("/api/jobs/no-such-job/cancel", **AUTH)
    assert response.status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    "method, path, allow",
    [
        ("delete", "/api/jobs", "GET, POST"),
        ("put", "/api/jobs", "GET, POST"),
        ("post", "/api/jobs/j1", "GET"),
        ("post", "/api/jobs/j1/proof", "GET"),
        ("get", "/api/jobs/j1/cancel", "POST"),
    ],
)
def test_wrong_method_is_405_with_allow(client, method, path, allow):
    response = getattr(client, method)(path, **AUTH)
    assert response.status_code == 405
    assert response["Allow"] == allow
    assert "not allowed" in response.json()["error"]


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["queued", "running", "failed", "cancelled"])
def test_proof_before_done_is_409(client, status):
    ProofJob.objects.create(job_id="j-409", proof_kind="window-post", status=status)
    response = client.get("/api/jobs/j-409/proof", **AUTH)
    assert response.status_code == 409
    assert response.json()["status"] == status
    assert f"is {status}" in response.json()["error"]
