"""The cuzk adapter on the fixture (a real StatusSnapshot): every field lands where the panel reads it."""
from __future__ import annotations

import pytest

from gpu_engine.vocabulary import COUNTER_KEYS, PARTITION_KEYS, PIPELINE_KEYS, WORKER_KEYS
from statuspanel.fleet.cuzk import adapt_cuzk
from tests.fleet.cuzk_server import load_fixture


@pytest.fixture
def snap() -> dict:
    return adapt_cuzk(load_fixture())


def test_pipelines_keep_whole_ids_and_get_full_labels(snap: dict) -> None:
    a, b = snap["pipelines"]
    assert a["job_id"] == "ps-snap-1000-42-7" and b["job_id"] == "ps-snap-1000-43-8"
    assert a["proof_label"] == "SnapDeals Update (ReplicaUpdate)"
    assert set(PIPELINE_KEYS) <= a.keys()
    assert a["status"] == "running" and b["status"] == "queued"
    assert a["total_partitions"] == 16 and a["partitions_done"] == 5 and a["partitions_failed"] == 0
    assert [p["state"] for p in a["partitions"]][:8] == ["done"] * 5 + ["gpu", "gpu", "synth_done"]
    assert all(set(PARTITION_KEYS) <= p.keys() for p in a["partitions"])
    assert a["partitions"][0]["synth_ms"] == 35400 and a["partitions"][0]["finalize_ms"] is None


def test_partitions_in_gpu_name_the_worker_that_says_it_proves_them(snap: dict) -> None:
    parts = snap["pipelines"][0]["partitions"]
    assert (parts[5]["worker_id"], parts[6]["worker_id"]) == (0, 1)
    assert parts[7]["worker_id"] is None


def test_workers_carry_state_assignment_and_label(snap: dict) -> None:
    w0, w1 = snap["gpu_workers"]
    assert all(set(WORKER_KEYS) <= w.keys() for w in (w0, w1))
    assert (w0["state"], w0["current_job"], w0["current_partition"], w0["busy_secs"]) == (
        "proving", "ps-snap-1000-42-7", 5, 0.6)
    assert w0["current_proof_kind"] == "snap-update"
    assert w0["current_proof_label"] == "SnapDeals Update (ReplicaUpdate)"
    assert w1["gpu_ordinal"] == 0


def test_memory_synthesis_and_counters(snap: dict) -> None:
    assert snap["memory"] == {"total_bytes": 544387104768, "used_bytes": 367219703808,
                              "available_bytes": 177167400960}
    assert snap["synthesis"] == {"max_concurrent": 12, "active": 4}
    assert set(COUNTER_KEYS) <= snap["counters"].keys()
    assert snap["counters"]["completed_by_kind"] == {"snap-update": 71, "porep-c2": 12, "window-post": 4}
    assert snap["counters"]["queue_depth"] == 3 and snap["counters"]["total_cancelled"] == 0


def test_what_only_cuzk_has_is_passed_on(snap: dict) -> None:
    (srs,) = snap["allocations"]["srs"]
    assert srs == {"circuit_id": "snap-update-32g", "bytes": 35433480192, "last_used_secs_ago": 0.6,
                   "evictable": False}
    assert snap["allocations"]["pce"][0]["bytes"] == 26843545600
    assert snap["buffers"] == {"synth_in_flight": 4, "provers_in_flight": 2, "aux_in_flight": 2,
                               "shells_in_flight": 3, "pending_handles": 1}


def test_the_fixture_is_consistent(snap: dict) -> None:
    assert snap["consistency"] == []


def test_unknown_kinds_and_states_are_shown_whole() -> None:
    doc = load_fixture()
    doc["pipelines"][0]["proof_kind"] = "ni-porep-c2-aggregated-v2"
    doc["pipelines"][0]["partitions"][7]["state"] = "waiting_for_srs"
    snap = adapt_cuzk(doc)
    assert snap["pipelines"][0]["proof_label"] == "ni-porep-c2-aggregated-v2"
    assert snap["pipelines"][0]["partitions"][7]["state"] == "waiting_for_srs"
    assert snap["gpu_workers"][0]["current_proof_label"] == "ni-porep-c2-aggregated-v2"


def test_a_busy_flag_stands_for_the_worker_state() -> None:
    doc = load_fixture()
    for worker, busy in zip(doc["gpu_workers"], (True, False)):
        del worker["state"]
        worker["busy"] = busy
    snap = adapt_cuzk(doc)
    assert [w["state"] for w in snap["gpu_workers"]] == ["proving", "idle"]
