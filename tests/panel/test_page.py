"""The panel page: login required, whole without JavaScript, engines from the cache, job history."""
from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.utils import timezone

from gpu_engine import runtime, wire
from gpu_engine.models import JobStatus, ProofJob
from gpu_engine.publisher import SnapshotPublisher
from tests.panel.helpers import SNAP_JOB, busy_tracker

pytestmark = pytest.mark.usefixtures("clean_panel_cache")


class NullLayer:
    async def group_send(self, group, message):
        return None


@pytest.fixture(autouse=True)
def _no_local_engine_after():
    yield
    runtime.set_local_tracker(None, None)


@pytest.fixture
def user_client(client, db):
    client.force_login(get_user_model().objects.create_user("op", password="pw-for-test-only"))
    return client


@pytest.mark.django_db
def test_anonymous_is_redirected_to_login(client):
    response = client.get("/")
    assert response.status_code == 302 and "login" in response["Location"]
    assert client.get("/panel/history").status_code == 302


def test_page_shows_published_engines_in_full(user_client):
    SnapshotPublisher(busy_tracker(), "gpu-host-7", heartbeat_secs=5, channel_layer=NullLayer()).publish_now()
    body = user_client.get("/").content.decode()
    assert 'data-engine-id="gpu-host-7"' in body
    assert f'title="{SNAP_JOB}"' in body and f">{SNAP_JOB}<" in body
    assert 'data-state="failed"' in body and "out of memory on GPU 0" in body
    assert "panel.js" in body and 'data-ws-path="/ws/status/"' in body
    assert "No engine has reported yet" in body  # present but hidden
    assert 'id="no-engines" class="empty" hidden' in body


def test_local_engine_shown_before_its_first_publish(user_client):
    runtime.set_local_tracker(busy_tracker(), "local-engine")
    body = user_client.get("/").content.decode()
    assert 'data-engine-id="local-engine"' in body and f">{SNAP_JOB}<" in body


def test_expired_engine_is_listed_offline(user_client):
    cache.set(wire.ENGINES_KEY, {"gone-engine": time.time() - 30}, None)
    body = user_client.get("/").content.decode()
    assert 'data-offline-engine-id="gone-engine"' in body and "offline since" in body


def test_no_engine_message(user_client):
    body = user_client.get("/").content.decode()
    assert 'id="no-engines" class="empty">' in body


def test_last_finished_jobs_link_to_admin(user_client):
    now = timezone.now()
    done = ProofJob.objects.create(job_id="ps-snap-1000-42-7", proof_kind="snap-update", status=JobStatus.DONE,
                                   started_at=now - timedelta(seconds=42), finished_at=now, claimed_by="gpu-host-7")
    ProofJob.objects.create(job_id="still-queued-job", proof_kind="window-post")
    body = user_client.get("/").content.decode()
    assert f'href="/admin/gpu_engine/proofjob/{done.pk}/change/"' in body
    assert "SnapDeals Update (ReplicaUpdate)" in body and "42.0 s" in body
    assert "still-queued-job" not in body
    partial = user_client.get("/panel/history").content.decode()
    assert f'title="{done.job_id}"' in partial and "<html" not in partial
