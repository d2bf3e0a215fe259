"""The split-proving race of the original system: a late finalizer must not free a re-assigned worker."""
from __future__ import annotations

from gpu_engine.tracker import StatusTracker
from tests.tracker.invariants import FakeClock, check_invariants


def _ready(t: StatusTracker, job: str, p: int) -> None:
    t.partition_synth_start(job, p)
    t.partition_synth_end(job, p)


def test_late_finalizer_of_job_a_leaves_worker_proving_job_b(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    t.register_workers([(0, 0)])
    t.register_job("job-A", "porep-c2", 10)
    t.register_job("job-B", "snap-update", 16)
    _ready(t, "job-A", 0)
    _ready(t, "job-B", 0)

    t.partition_gpu_start("job-A", 0, 0)
    clock.advance(1.0)
    t.partition_finalize_start("job-A", 0, 0)   # worker 0 handed A/0 to a finalizer
    t.partition_gpu_start("job-B", 0, 0)        # and took B/0 at once
    clock.advance(0.5)
    t.partition_gpu_end("job-A", 0, 0)          # A's finalizer ends A/0 late

    snap = t.snapshot()
    check_invariants(snap)
    (worker,) = snap["gpu_workers"]
    assert worker["state"] == "proving"
    assert (worker["current_job"], worker["current_partition"]) == ("job-B", 0)
    assert worker["busy_secs"] == 0.5
    a, b = snap["pipelines"]
    assert a["partitions"][0]["state"] == "done"
    assert a["partitions"][0]["gpu_ms"] == 1000.0
    assert a["partitions"][0]["finalize_ms"] == 500.0
    assert b["partitions"][0]["state"] == "gpu"
    assert b["partitions"][0]["worker_id"] == 0


def test_late_failure_of_job_a_leaves_worker_proving_job_b(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    t.register_workers([(0, 0)])
    t.register_job("job-A", "porep-c2", 10)
    t.register_job("job-B", "porep-c2", 10)
    _ready(t, "job-A", 0)
    _ready(t, "job-B", 0)
    t.partition_gpu_start("job-A", 0, 0)
    t.partition_finalize_start("job-A", 0, 0)
    t.partition_gpu_start("job-B", 0, 0)
    t.partition_failed("job-A", 0, "G2 MSM failed")

    snap = t.snapshot()
    check_invariants(snap)
    assert snap["gpu_workers"][0]["state"] == "proving"
    assert snap["gpu_workers"][0]["current_job"] == "job-B"
    assert snap["pipelines"][0]["partitions"][0]["state"] == "failed"
