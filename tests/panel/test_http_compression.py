"""The page and the API answers are gzipped for a client that accepts it (Django's GZipMiddleware,
with its BREACH mitigation), and sent plain to one that does not."""
from __future__ import annotations

import gzip
import json

import pytest
from django.contrib.auth import get_user_model

from tests.credentials import TOKEN

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clean_panel_cache")]


@pytest.fixture
def user_client(client):
    client.force_login(get_user_model().objects.create_user("op", password="pw-for-test-only"))
    return client


def test_panel_page_is_gzipped_when_accepted(user_client):
    plain = user_client.get("/")
    zipped = user_client.get("/", HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert plain.status_code == zipped.status_code == 200
    assert "Content-Encoding" not in plain.headers
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in zipped.headers["Vary"]
    page = gzip.decompress(zipped.content).decode()
    assert "<html" in page.lower() and len(zipped.content) < len(plain.content)


def test_api_jobs_is_gzipped_when_accepted_and_decodes_to_the_same_answer(client, settings):
    from gpu_engine.models import ProofJob

    settings.VASTMANAGER_TOKEN = TOKEN
    for n in range(20):
        ProofJob.objects.create(job_id=f"gzip-job-{n}", proof_kind="window-post")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    plain = client.get("/api/jobs", **auth)
    zipped = client.get("/api/jobs", HTTP_ACCEPT_ENCODING="gzip", **auth)
    assert plain.status_code == zipped.status_code == 200, plain.content[:300]
    assert zipped.headers.get("Content-Encoding") == "gzip"
    assert json.loads(gzip.decompress(zipped.content)) == json.loads(plain.content)


def test_small_answers_stay_plain(client):
    answer = client.get("/healthz", HTTP_ACCEPT_ENCODING="gzip")
    assert answer.status_code == 200 and "Content-Encoding" not in answer.headers  # under 200 bytes
