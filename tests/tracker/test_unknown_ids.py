"""Unknown ids and impossible transitions raise TrackerError and leave the state untouched."""
from __future__ import annotations

import pytest

from gpu_engine.tracker import StatusTracker, TrackerError
from tests.tracker.invariants import FakeClock, check_invariants


@pytest.fixture
def tracker(clock: FakeClock) -> StatusTracker:
    t = StatusTracker(clock=clock)
    t.register_workers([(0, 0)])
    t.register_job("job-1", "porep-c2", 10)
    return t


@pytest.mark.parametrize("call", [
    lambda t: t.partition_synth_start("no-such-job", 0),
    lambda t: t.partition_synth_end("no-such-job", 0),
    lambda t: t.partition_gpu_start("no-such-job", 0, 0),
    lambda t: t.partition_finalize_start("no-such-job", 0, 0),
    lambda t: t.partition_gpu_end("no-such-job", 0, 0),
    lambda t: t.partition_failed("no-such-job", 0, "x"),
    lambda t: t.partition_retry("no-such-job", 0),
    lambda t: t.job_completed("no-such-job", True),
])
def test_unknown_job_id_raises(tracker: StatusTracker, call) -> None:
    with pytest.raises(TrackerError, match="unknown job id 'no-such-job'"):
        call(tracker)


@pytest.mark.parametrize("index", [10, -1, 99, "0", 1.0, None])
def test_bad_partition_index_raises(tracker: StatusTracker, index) -> None:
    before = tracker.snapshot()
    with pytest.raises(TrackerError, match="has no partition"):
        tracker.partition_synth_start("job-1", index)
    after = tracker.snapshot()
    assert after["seq"] == before["seq"]
    assert after["pipelines"] == before["pipelines"]


@pytest.mark.parametrize("call", [
    lambda t: t.partition_gpu_start("job-1", 0, 7),
    lambda t: t.worker_error("w-x", "boom"),
    lambda t: t.worker_recovered("w-x"),
])
def test_unknown_worker_raises(tracker: StatusTracker, call) -> None:
    with pytest.raises(TrackerError, match="unknown worker id"):
        call(tracker)
    check_invariants(tracker.snapshot())


def test_tracker_error_is_a_value_error() -> None:
    assert issubclass(TrackerError, ValueError)


def test_impossible_transitions_raise(tracker: StatusTracker) -> None:
    with pytest.raises(TrackerError, match="partition_synth_end.*'pending'"):
        tracker.partition_synth_end("job-1", 0)
    with pytest.raises(TrackerError, match="partition_finalize_start"):
        tracker.partition_finalize_start("job-1", 0, 0)
    with pytest.raises(TrackerError, match="partition_gpu_end"):
        tracker.partition_gpu_end("job-1", 0, 0)
    tracker.partition_gpu_start("job-1", 0, 0)
    with pytest.raises(TrackerError, match="partition_gpu_start.*'gpu'"):
        tracker.partition_gpu_start("job-1", 0, 0)
    with pytest.raises(TrackerError, match="runs on worker 0, not 5"):
        tracker.partition_finalize_start("job-1", 0, 5)
    with pytest.raises(TrackerError, match="cannot succeed with 0 of 10"):
        tracker.job_completed("job-1", True)
    tracker.partition_gpu_end("job-1", 0, 0)
    with pytest.raises(TrackerError, match="partition_failed.*'done'"):
        tracker.partition_failed("job-1", 0, "late")
    with pytest.raises(TrackerError, match="partition_retry.*'done'"):
        tracker.partition_retry("job-1", 0)
    tracker.job_completed("job-1", False)
    with pytest.raises(TrackerError, match="already completed"):
        tracker.job_completed("job-1", False)
    snap = tracker.snapshot()
    check_invariants(snap)
    assert snap["counters"]["total_failed"] == 1


@pytest.mark.parametrize("args", [("", "porep-c2", 1), ("j", "", 1), ("j", "porep-c2", 0),
                                  ("j", "porep-c2", True), (7, "porep-c2", 1)])
def test_bad_register_job_raises(args) -> None:
    with pytest.raises(TrackerError):
        StatusTracker().register_job(*args)


def test_duplicate_running_job_raises(tracker: StatusTracker) -> None:
    with pytest.raises(TrackerError, match="already registered"):
        tracker.register_job("job-1", "porep-c2", 10)


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_bad_queue_depth_raises(bad) -> None:
    with pytest.raises(TrackerError):
        StatusTracker().set_queue_depth(bad)


def test_bad_gpu_entry_raises() -> None:
    with pytest.raises(TrackerError, match="ordinal"):
        StatusTracker().set_gpus([{"name": "H200"}])
