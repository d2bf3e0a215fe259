"""Job ids and proof kinds come back whole, in the snapshot and in worker assignments."""
from __future__ import annotations

import json

from gpu_engine.kinds import kind_label
from gpu_engine.tracker import StatusTracker
from tests.tracker.invariants import FakeClock

LONG_ID = "job-" + "x" * 92 + "-end"


def test_long_and_snap_ids_come_back_whole(clock: FakeClock) -> None:
    assert len(LONG_ID) == 100
    t = StatusTracker(clock=clock)
    t.register_workers([(0, 0), (1, 0)])
    t.register_job(LONG_ID, "porep-c2", 10)
    t.register_job("ps-snap-1000-42-7", "snap-update", 16)
    t.partition_gpu_start(LONG_ID, 0, 0)
    t.partition_gpu_start("ps-snap-1000-42-7", 0, 1)

    snap = json.loads(json.dumps(t.snapshot()))
    assert [p["job_id"] for p in snap["pipelines"]] == [LONG_ID, "ps-snap-1000-42-7"]
    assert [w["current_job"] for w in snap["gpu_workers"]] == [LONG_ID, "ps-snap-1000-42-7"]
    assert [p["proof_kind"] for p in snap["pipelines"]] == ["porep-c2", "snap-update"]
    assert snap["pipelines"][1]["proof_label"] == kind_label("snap-update") == "SnapDeals Update (ReplicaUpdate)"
    assert snap["gpu_workers"][1]["current_proof_kind"] == "snap-update"
    assert snap["gpu_workers"][1]["current_proof_label"] == "SnapDeals Update (ReplicaUpdate)"


def test_unknown_kind_is_kept_verbatim() -> None:
    t = StatusTracker()
    t.register_job("j", "custom-kind-with-a-long-name", 2)
    t.job_completed("j", False)
    snap = t.snapshot()
    assert snap["pipelines"][0]["proof_label"] == "custom-kind-with-a-long-name"
    assert snap["counters"]["failed_by_kind"] == {"custom-kind-with-a-long-name": 1}
