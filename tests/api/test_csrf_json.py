"""A CSRF refusal under /api/ is JSON like every other API error; elsewhere it stays Django's page."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client


@pytest.fixture
def session_client(db) -> Client:
    user = get_user_model().objects.create_user("op", password="pw-for-tests-1")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def test_api_csrf_refusal_is_json(session_client):
    response = session_client.post("/api/jobs", data=json.dumps({"proof_kind": "window-post"}),
                                   content_type="application/json")
    assert response.status_code == 403
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error.startswith("CSRF check failed") and "Bearer" in error


def test_cancel_csrf_refusal_is_json(session_client):
    response = session_client.post("/api/jobs/some-job/cancel")
    assert response.status_code == 403 and "CSRF" in response.json()["error"]


def test_csrf_refusal_outside_the_api_is_html(session_client):
    response = session_client.post("/admin/logout/")
    assert response.status_code == 403
    assert response["Content-Type"].startswith("text/html")
