"""No worker stays `proving` after an error, whichever way the error is reported."""
from __future__ import annotations

from gpu_engine.tracker import StatusTracker
from tests.tracker.invariants import FakeClock, check_invariants


def _on_gpu(t: StatusTracker) -> None:
    t.register_workers([(0, 0), (1, 0)])
    t.register_job("job-1", "porep-c2", 10)
    t.partition_synth_start("job-1", 0)
    t.partition_synth_end("job-1", 0)
    t.partition_gpu_start("job-1", 0, 0)


def test_partition_failed_frees_its_worker(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    _on_gpu(t)
    t.partition_failed("job-1", 0, "out of device memory")
    snap = t.snapshot()
    check_invariants(snap)
    assert [w["state"] for w in snap["gpu_workers"]] == ["idle", "idle"]


def test_worker_error_fails_its_partition_and_shows_error(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    _on_gpu(t)
    t.worker_error(0, "CUDA_ERROR_ILLEGAL_ADDRESS")
    snap = t.snapshot()
    check_invariants(snap)
    w0 = snap["gpu_workers"][0]
    assert w0["state"] == "error" and w0["error"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert w0["current_job"] is None
    part = snap["pipelines"][0]["partitions"][0]
    assert part["state"] == "failed" and "CUDA_ERROR_ILLEGAL_ADDRESS" in part["error"]

    t.partition_failed("job-1", 0, "prove_device raised")   # the engine's own report is harmless
    t.worker_recovered(0)
    t.partition_retry("job-1", 0)
    t.partition_gpu_start("job-1", 0, 1)
    snap = t.snapshot()
    check_invariants(snap)
    assert [w["state"] for w in snap["gpu_workers"]] == ["idle", "proving"]
    assert snap["pipelines"][0]["partitions"][0]["error"] is None


def test_retry_of_gpu_partition_frees_its_worker(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    _on_gpu(t)
    t.partition_retry("job-1", 0)
    snap = t.snapshot()
    check_invariants(snap)
    assert snap["gpu_workers"][0]["state"] == "idle"
    assert snap["pipelines"][0]["partitions"][0]["state"] == "pending"
    assert snap["pipelines"][0]["partitions"][0]["gpu_ms"] is None


def test_errored_worker_handed_work_counts_as_recovered(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    _on_gpu(t)
    t.worker_error(1, "driver reset")
    t.partition_gpu_start("job-1", 1, 1)
    snap = t.snapshot()
    check_invariants(snap)
    assert snap["gpu_workers"][1]["state"] == "proving"
    assert snap["gpu_workers"][1]["error"] is None
