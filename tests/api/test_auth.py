"""API access: bearer token or logged-in user; CSRF only for session callers; /healthz open."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.middleware.csrf import _get_new_csrf_string
from django.test import Client

from statuspanel import auth
from tests.credentials import TOKEN


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/jobs", "/api/jobs/x", "/api/jobs/x/proof", "/api/status"])
def test_anonymous_is_401(client, path):
    response = client.get(path)
    assert response.status_code == 401
    assert "authentication required" in response.json()["error"]
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.django_db
@pytest.mark.parametrize("header", ["Bearer wrong", "Bearer ", "Basic abc", TOKEN])
def test_bad_token_is_401(client, header):
    response = client.get("/api/jobs", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401


@pytest.mark.django_db
def test_healthz_is_open(client):
    assert client.get("/healthz").status_code == 200


@pytest.mark.django_db
def test_token_post_needs_no_csrf():
    client = Client(enforce_csrf_checks=True)
    response = client.post("/api/jobs", data=json.dumps({"proof_kind": "window-post"}),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 201


@pytest.mark.django_db
def test_session_user_reads_and_posts_with_csrf():
    user = get_user_model().objects.create_user("op", password="pw-for-tests-1")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.get("/api/jobs").status_code == 200
    body = json.dumps({"proof_kind": "window-post"})
    assert client.post("/api/jobs", data=body, content_type="application/json").status_code == 403
    csrf = _get_new_csrf_string()
    client.cookies["csrftoken"] = csrf
    response = client.post("/api/jobs", data=body, content_type="application/json", HTTP_X_CSRFTOKEN=csrf)
    assert response.status_code == 201


@pytest.mark.django_db
def test_login_url_logs_in_and_redirects(client):
    response = client.get(f"/login?token={TOKEN}")
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/api/jobs").status_code == 200
    user = get_user_model().objects.get(username=auth.SERVICE_USERNAME)
    assert not user.has_usable_password()


@pytest.mark.django_db
def test_login_redirect_stays_on_site(client):
    assert client.get(f"/login?token={TOKEN}&next=/admin/")["Location"] == "/admin/"
    assert client.get(f"/login?token={TOKEN}&next=https://evil.example/")["Location"] == "/"


@pytest.mark.django_db
def test_login_with_bad_token_is_403(client):
    assert client.get("/login?token=nope").status_code == 403
    assert client.get("/login").status_code == 403
    assert client.get("/api/jobs").status_code == 401


def test_token_generated_into_data_dir_when_unset(settings, tmp_path):
    settings.VASTMANAGER_TOKEN = ""
    settings.DATA_DIR = tmp_path
    token = auth.api_token()
    assert len(token) >= 32
    assert (tmp_path / "api_token").read_text().strip() == token
    assert auth.api_token() == token
    assert auth.token_is_valid(token) and not auth.token_is_valid(token + "x") and not auth.token_is_valid("")
    assert auth.login_url("http://127.0.0.1:8000") == f"http://127.0.0.1:8000/login?token={token}"
