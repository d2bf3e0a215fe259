"""Single-partition jobs (PoSt) are registered and shown like any other job."""
from __future__ import annotations

import pytest

from gpu_engine.tracker import StatusTracker
from tests.tracker.invariants import FakeClock, check_invariants


@pytest.mark.parametrize("kind", ["window-post", "winning-post"])
def test_single_partition_job_is_visible_through_its_life(kind: str, clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    t.register_workers([("gpu0-w0", 0)])
    t.register_job(f"{kind}-job", kind, 1)

    snap = t.snapshot()
    check_invariants(snap)
    (pipe,) = snap["pipelines"]
    assert (pipe["job_id"], pipe["proof_kind"], pipe["status"], pipe["total_partitions"]) == (
        f"{kind}-job", kind, "queued", 1)

    t.partition_synth_start(f"{kind}-job", 0)
    clock.advance(0.2)
    t.partition_synth_end(f"{kind}-job", 0)
    t.partition_gpu_start(f"{kind}-job", 0, "gpu0-w0")
    snap = t.snapshot()
    check_invariants(snap)
    assert snap["pipelines"][0]["status"] == "running"
    assert snap["gpu_workers"][0]["current_job"] == f"{kind}-job"

    t.partition_gpu_end(f"{kind}-job", 0, "gpu0-w0")
    t.job_completed(f"{kind}-job", True)
    snap = t.snapshot()
    check_invariants(snap)
    (pipe,) = snap["pipelines"]
    assert pipe["status"] == "done" and pipe["partitions_done"] == 1
    assert pipe["partitions"][0]["synth_ms"] == pytest.approx(200.0)
    assert snap["counters"]["completed_by_kind"] == {kind: 1}
