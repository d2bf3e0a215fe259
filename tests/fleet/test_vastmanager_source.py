"""A vastmanager source: the collector reads another engine's /api/status with its read-only status
token (a live server here), shows it under the source's name; the token never reaches a snapshot, the
fleet API or the log."""
from __future__ import annotations

import json
import logging

import pytest

from gpu_engine import runtime, wire
from statuspanel.fleet.transport import SourceConfig
from statuspanel.fleet.vocabulary import SOURCE_KEYS
from tests.credentials import TOKEN
from tests.fleet.conftest import wait_until
from tests.panel.helpers import busy_tracker

STATUS_TOKEN = "remote-status-token-0123456789"
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def remote(live_server, settings):
    settings.VASTMANAGER_TOKEN = TOKEN
    settings.VASTMANAGER_STATUS_TOKEN = STATUS_TOKEN
    runtime.set_local_tracker(busy_tracker(), "remote-engine-7")
    yield live_server.url
    runtime.set_local_tracker(None)


def _cfg(url: str, token: str) -> SourceConfig:
    return SourceConfig(id=1, name="our-box", kind="vastmanager", transport="http", url=url, token=token,
                        interval_secs=0.3)


def test_a_remote_engine_read_with_its_status_token(collect, remote, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    collect([_cfg(remote, STATUS_TOKEN)])
    snap = wait_until(lambda: (s := wire.default_cache().get(wire.snapshot_key("our-box"))) and
                      s["source"]["state"] == "online" and s, 10, "online")
    assert snap["engine_id"] == "our-box" and snap["remote_engine_id"] == "remote-engine-7"
    assert snap["source"]["kind"] == "vastmanager"
    assert snap["source"]["target"] == remote + "/api/status"
    assert snap["pipelines"][0]["job_id"] == "ps-snap-1000-42-7"
    assert "allocations" not in snap and snap["consistency"] == []
    assert [p["state"] for p in snap["pipelines"][0]["partitions"]] == ["done", "gpu", "failed", "synthesizing"]
    assert STATUS_TOKEN not in json.dumps(snap)
    assert STATUS_TOKEN not in caplog.text


def test_a_wrong_token_is_unauthorized_and_not_logged(collect, remote, caplog) -> None:
    wrong = "not-the-status-token-987654321"
    caplog.set_level(logging.DEBUG)
    collect([_cfg(remote, wrong)])
    source = wait_until(lambda: (s := wire.default_cache().get(wire.snapshot_key("our-box"))) and
                        s["source"]["state"] == "unreachable" and s["source"], 10, "unreachable")
    assert source["reason"] == "unauthorized" and source["error"].startswith("401")
    assert wrong not in caplog.text


def test_the_fleet_api_lists_local_and_remote_engines(collect, remote, client) -> None:
    collect([_cfg(remote, STATUS_TOKEN)])
    wait_until(lambda: (s := wire.default_cache().get(wire.snapshot_key("our-box"))) and
               s["source"]["state"] == "online", 10, "online")
    response = client.get("/api/fleet", HTTP_AUTHORIZATION=f"Bearer {STATUS_TOKEN}")
    assert response.status_code == 200
    body = response.json()
    engines = {e["engine_id"]: e for e in body["engines"]}
    assert set(engines) == {"our-box", "remote-engine-7"}  # the remote one, and this process's own engine
    assert engines["remote-engine-7"]["source"]["transport"] == "local"
    for engine in engines.values():
        assert set(SOURCE_KEYS) <= engine["source"].keys()
        assert engine["consistency"] == []
    summary = body["summary"]
    assert summary["engines_total"] == 2 and summary["engines_online"] == 2 and summary["sources_failing"] == 0
    assert summary["workers"]["proving"] == 2 and summary["partitions"]["gpu"] == 2
    assert STATUS_TOKEN not in response.content.decode()
    assert client.get("/api/fleet").status_code == 401
    assert client.post("/api/fleet", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 405


def test_a_source_config_never_shows_its_token() -> None:
    cfg = _cfg("http://h:1", STATUS_TOKEN)
    assert STATUS_TOKEN not in repr(cfg) and STATUS_TOKEN not in str(cfg)
