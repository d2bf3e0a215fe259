"""Failed (and completed) jobs are counted, stay visible for the grace period, then drop out."""
from __future__ import annotations

from gpu_engine.tracker import StatusTracker
from tests.tracker.invariants import FakeClock, check_invariants


def test_failed_job_is_counted_then_cleared_after_grace(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock, grace_secs=30.0)
    t.register_job("job-bad", "snap-update", 16)
    t.partition_failed("job-bad", 5, "synthesis crashed")
    t.job_completed("job-bad", False)

    clock.advance(29.9)
    snap = t.snapshot()
    check_invariants(snap)
    assert [p["job_id"] for p in snap["pipelines"]] == ["job-bad"]
    assert snap["pipelines"][0]["status"] == "failed"
    assert snap["counters"]["total_failed"] == 1
    assert snap["counters"]["failed_by_kind"] == {"snap-update": 1}

    seq_before = snap["seq"]
    clock.advance(0.2)
    snap = t.snapshot()
    check_invariants(snap)
    assert snap["pipelines"] == []
    assert snap["seq"] > seq_before                 # the purge is a change a publisher must send
    assert snap["counters"]["total_failed"] == 1    # counted for good
    assert snap["counters"]["total_completed"] == 0


def test_completed_job_is_cleared_after_grace(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock, grace_secs=5.0)
    t.register_workers([(0, 0)])
    t.register_job("job-ok", "window-post", 1)
    t.partition_gpu_start("job-ok", 0, 0)
    t.partition_gpu_end("job-ok", 0, 0)
    t.job_completed("job-ok", True)
    clock.advance(4.0)
    assert len(t.snapshot()["pipelines"]) == 1
    clock.advance(1.0)
    snap = t.snapshot()
    assert snap["pipelines"] == []
    assert snap["counters"]["completed_by_kind"] == {"window-post": 1}


def test_failed_job_with_partition_still_on_gpu_waits_for_the_worker(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock, grace_secs=1.0)
    t.register_workers([(0, 0)])
    t.register_job("job-x", "porep-c2", 10)
    t.partition_gpu_start("job-x", 1, 0)
    t.partition_failed("job-x", 0, "bad witness")
    t.job_completed("job-x", False)
    clock.advance(10.0)
    snap = t.snapshot()
    check_invariants(snap)                          # still shown: worker 0 is still proving it
    assert snap["gpu_workers"][0]["current_job"] == "job-x"
    t.partition_finalize_start("job-x", 1, 0)       # late events on the failed job are accepted
    t.partition_gpu_end("job-x", 1, 0)
    snap = t.snapshot()
    check_invariants(snap)
    assert snap["pipelines"] == []
    assert snap["gpu_workers"][0]["state"] == "idle"


def test_rerun_of_finished_job_replaces_it(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    t.register_job("job-r", "window-post", 1)
    t.partition_failed("job-r", 0, "boom")
    t.job_completed("job-r", False)
    t.register_job("job-r", "window-post", 1)
    snap = t.snapshot()
    check_invariants(snap)
    assert [(p["job_id"], p["status"]) for p in snap["pipelines"]] == [("job-r", "queued")]
    clock.advance(60.0)
    assert len(t.snapshot()["pipelines"]) == 1      # the re-run is not purged by the old grace
