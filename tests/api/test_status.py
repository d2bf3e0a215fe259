"""GET /healthz and GET /api/status: this process's engine, as JSON, with labels whole."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from gpu_engine import runtime
from gpu_engine.budget import MemoryBudget
from gpu_engine.tracker import StatusTracker
from tests.credentials import AUTH
from tests.tracker.invariants import check_invariants

LONG_ID = "job-" + "y" * 92 + "-end"


@pytest.fixture
def no_engine() -> Iterator[None]:
    saved = (runtime.local_tracker(), runtime.local_engine_id())
    runtime.set_local_tracker(None, None)
    yield
    runtime.set_local_tracker(*saved)


@pytest.fixture
def engine(no_engine: None) -> StatusTracker:
    t = StatusTracker(budget=MemoryBudget(4096), synth_max=2, backend="cpu")
    t.register_workers([(0, 0), (1, 0)])
    t.register_job("ps-snap-1000-42-7", "snap-update", 16)
    t.register_job(LONG_ID, "winning-post", 1)
    t.partition_synth_start("ps-snap-1000-42-7", 0)
    t.partition_synth_end("ps-snap-1000-42-7", 0)
    t.partition_gpu_start("ps-snap-1000-42-7", 0, 1)
    runtime.set_local_tracker(t, "engine-host-a")
    return t


def test_healthz_without_engine(client, no_engine: None) -> None:
    resp = client.get("/healthz")
    assert resp.status_code == 200
    assert resp.json() == {"ok": True, "engine_running": False, "fleet_collector": False}


def test_healthz_with_engine(client, engine: StatusTracker) -> None:
    assert client.get("/healthz").json() == {"ok": True, "engine_running": True, "fleet_collector": False}


def test_status_is_503_without_engine(client, no_engine: None) -> None:
    resp = client.get("/api/status", **AUTH)
    assert resp.status_code == 503
    assert "no engine" in resp.json()["error"]


def test_status_needs_authentication(client, engine: StatusTracker) -> None:
    assert client.get("/api/status").status_code == 401


def test_status_returns_the_stamped_snapshot(client, engine: StatusTracker) -> None:
    resp = client.get("/api/status", **AUTH)
    assert resp.status_code == 200
    assert resp["Content-Type"] == "application/json"
    snap = resp.json()
    check_invariants(snap)
    assert snap["engine_id"] == "engine-host-a"
    assert snap["seq"] == engine.seq
    assert snap["memory"]["total_bytes"] == 4096
    assert snap["synthesis"]["max_concurrent"] == 2
    assert [p["job_id"] for p in snap["pipelines"]] == ["ps-snap-1000-42-7", LONG_ID]
    assert [p["proof_kind"] for p in snap["pipelines"]] == ["snap-update", "winning-post"]
    worker = snap["gpu_workers"][1]
    assert (worker["state"], worker["current_job"], worker["current_partition"]) == (
        "proving", "ps-snap-1000-42-7", 0)
    assert worker["current_proof_label"] == "SnapDeals Update (ReplicaUpdate)"


def test_status_follows_the_tracker(client, engine: StatusTracker) -> None:
    engine.partition_finalize_start("ps-snap-1000-42-7", 0, 1)
    snap = client.get("/api/status", **AUTH).json()
    assert snap["gpu_workers"][1]["state"] == "idle"
    assert snap["pipelines"][0]["partitions"][0]["state"] == "finalizing"


@pytest.mark.parametrize("url", ["/healthz", "/api/status"])
def test_post_is_not_allowed(client, engine: StatusTracker, url: str) -> None:
    assert client.post(url, **AUTH).status_code == 405
