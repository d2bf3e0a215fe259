"""The read-only status token (VASTMANAGER_STATUS_TOKEN): it reads /api/status, /api/fleet and /metrics,
and is refused (403) where jobs are submitted, listed or cancelled; the operator's token keeps full rights."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from gpu_engine import runtime
from tests.credentials import AUTH, TOKEN
from tests.panel.helpers import busy_tracker

STATUS_TOKEN = "read-only-status-token-0123"
STATUS_AUTH = {"HTTP_AUTHORIZATION": f"Bearer {STATUS_TOKEN}"}


@pytest.fixture(autouse=True)
def status_token(settings) -> str:
    settings.VASTMANAGER_STATUS_TOKEN = STATUS_TOKEN
    return STATUS_TOKEN


@pytest.fixture
def engine() -> Iterator[None]:
    runtime.set_local_tracker(busy_tracker(), "token-engine")
    yield
    runtime.set_local_tracker(None)


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/api/status", "/api/fleet", "/metrics"])
def test_the_status_token_reads_status(client, engine, url: str) -> None:
    assert client.get(url, **STATUS_AUTH).status_code == 200
    assert client.get(url, **AUTH).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("method,url", [("post", "/api/jobs"), ("get", "/api/jobs"),
                                        ("get", "/api/jobs/some-job"), ("post", "/api/jobs/some-job/cancel")])
def test_the_status_token_cannot_touch_jobs(client, method: str, url: str) -> None:
    kwargs = {"data": "{}", "content_type": "application/json"} if method == "post" else {}
    response = getattr(client, method)(url, **kwargs, **STATUS_AUTH)
    assert response.status_code == 403
    assert "read-only" in response.json()["error"]


@pytest.mark.django_db
def test_the_operator_token_keeps_full_rights(client) -> None:
    response = client.post("/api/jobs", data='{"proof_kind": "window-post"}', content_type="application/json",
                           **AUTH)
    assert response.status_code == 201
    job = response.json()["job_id"]
    assert client.post(f"/api/jobs/{job}/cancel", **AUTH).status_code == 200


@pytest.mark.django_db
def test_without_a_configured_status_token_nothing_but_the_operator_token_passes(client, settings, engine) -> None:
    settings.VASTMANAGER_STATUS_TOKEN = ""
    assert client.get("/api/status", **STATUS_AUTH).status_code == 401
    assert client.get("/api/status", HTTP_AUTHORIZATION="Bearer ").status_code == 401
    assert client.get("/api/status", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_status_token_opens_the_status_stream() -> None:
    from tests.panel.helpers import ORIGIN
    from tests.panel.helpers import communicator as client_of

    communicator = client_of(f"/ws/status/?token={STATUS_TOKEN}&format=json", headers=[ORIGIN])
    connected, _ = await communicator.connect()
    assert connected
    await communicator.disconnect()
