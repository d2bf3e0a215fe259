"""cuzk's call sequence: a worker starts its next partition before the previous one's gpu_end, with no
finalize_start. The tracker treats it as split proving instead of raising."""
from __future__ import annotations

import pytest

from gpu_engine.tracker import StatusTracker, TrackerError
from tests.tracker.invariants import FakeClock, check_invariants


def _ready(t: StatusTracker, job: str, *parts: int) -> None:
    for p in parts:
        t.partition_synth_start(job, p)
        t.partition_synth_end(job, p)


def test_next_gpu_start_moves_the_previous_partition_to_finalizing(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    t.register_workers([(0, 0)])
    t.register_job("job-A", "snap-update", 16)
    _ready(t, "job-A", 0, 1)
    t.partition_gpu_start("job-A", 0, 0)
    clock.advance(2.0)
    t.partition_gpu_start("job-A", 1, 0)          # cuzk: no finalize_start for A/0
    snap = t.snapshot()
    check_invariants(snap)
    parts = snap["pipelines"][0]["partitions"]
    assert parts[0]["state"] == "finalizing" and parts[0]["gpu_ms"] == 2000.0
    assert parts[1]["state"] == "gpu" and parts[1]["worker_id"] == 0
    (worker,) = snap["gpu_workers"]
    assert (worker["state"], worker["current_job"], worker["current_partition"]) == ("proving", "job-A", 1)
    assert snap["consistency"] == []


def test_late_gpu_end_of_a_leaves_the_worker_proving_b(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    t.register_workers([(0, 0), (1, 0)])
    t.register_job("job-A", "porep-c2", 10)
    t.register_job("job-B", "snap-update", 16)
    _ready(t, "job-A", 0)
    _ready(t, "job-B", 0)
    t.partition_gpu_start("job-A", 0, 0)
    clock.advance(1.0)
    t.partition_gpu_start("job-B", 0, 0)          # B before A's gpu_end
    clock.advance(0.5)
    t.partition_gpu_end("job-A", 0, 0)            # A's finalizer reports late
    snap = t.snapshot()
    check_invariants(snap)
    assert snap["consistency"] == []
    a, b = snap["pipelines"]
    assert a["partitions"][0]["state"] == "done"
    assert a["partitions"][0]["gpu_ms"] == 1000.0 and a["partitions"][0]["finalize_ms"] == 500.0
    assert b["partitions"][0]["state"] == "gpu"
    w0 = snap["gpu_workers"][0]
    assert (w0["state"], w0["current_job"], w0["current_partition"]) == ("proving", "job-B", 0)
    assert w0["busy_secs"] == 0.5
    t.partition_gpu_end("job-B", 0, 0)
    snap = t.snapshot()
    check_invariants(snap)
    assert snap["gpu_workers"][0]["state"] == "idle"


def test_late_failure_of_the_previous_partition_keeps_the_worker(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    t.register_workers([(0, 0)])
    t.register_job("job-A", "porep-c2", 10)
    _ready(t, "job-A", 0, 1)
    t.partition_gpu_start("job-A", 0, 0)
    t.partition_gpu_start("job-A", 1, 0)
    t.partition_failed("job-A", 0, "proof did not verify")
    snap = t.snapshot()
    check_invariants(snap)
    assert snap["pipelines"][0]["partitions"][0]["state"] == "failed"
    assert snap["gpu_workers"][0]["current_partition"] == 1


def test_a_partition_already_in_gpu_cannot_be_started_again(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    t.register_workers([(0, 0), (1, 0)])
    t.register_job("job-A", "porep-c2", 10)
    _ready(t, "job-A", 0)
    t.partition_gpu_start("job-A", 0, 0)
    seq = t.seq
    with pytest.raises(TrackerError, match="partition_gpu_start.*'gpu'"):
        t.partition_gpu_start("job-A", 0, 1)
    assert t.seq == seq
    check_invariants(t.snapshot())
