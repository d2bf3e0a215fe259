"""A partition that fails on the GPU shows `failed` with its error, never `done`."""
from __future__ import annotations

from gpu_engine.tracker import StatusTracker
from tests.tracker.invariants import FakeClock, check_invariants


def test_failed_gpu_partition_shows_failed_with_error(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    t.register_workers([(0, 0)])
    t.register_job("job-1", "porep-c2", 10)
    t.partition_synth_start("job-1", 3)
    t.partition_synth_end("job-1", 3)
    t.partition_gpu_start("job-1", 3, 0)
    clock.advance(2.0)
    t.partition_failed("job-1", 3, "CUDA_ERROR_LAUNCH_FAILED in msm_g1")
    clock.advance(5.0)

    snap = t.snapshot()
    check_invariants(snap)
    pipe = snap["pipelines"][0]
    part = pipe["partitions"][3]
    assert part["state"] == "failed"
    assert part["error"] == "CUDA_ERROR_LAUNCH_FAILED in msm_g1"
    assert part["gpu_ms"] == 2000.0          # frozen at the failure, not growing
    assert pipe["partitions_done"] == 0
    assert pipe["partitions_failed"] == 1


def test_failed_finalizing_partition_shows_failed(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    t.register_workers([(0, 0)])
    t.register_job("job-1", "snap-update", 16)
    t.partition_synth_start("job-1", 0)
    t.partition_synth_end("job-1", 0)
    t.partition_gpu_start("job-1", 0, 0)
    t.partition_finalize_start("job-1", 0, 0)
    t.partition_failed("job-1", 0, "proof did not verify")
    snap = t.snapshot()
    check_invariants(snap)
    assert snap["pipelines"][0]["partitions"][0]["state"] == "failed"


def test_second_failure_report_keeps_first_cause(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    t.register_job("job-1", "window-post", 1)
    t.partition_failed("job-1", 0, "first")
    t.partition_failed("job-1", 0, "second")
    assert t.snapshot()["pipelines"][0]["partitions"][0]["error"] == "first"
