"""Cancelled and requeued jobs are not failures: the failure counters stay honest."""
from __future__ import annotations

import pytest

from gpu_engine.tracker import StatusTracker, TrackerError


def _tracker_with_job(job_id: str = "ps-snap-1000-42-7") -> StatusTracker:
    t = StatusTracker(grace_secs=30.0)
    t.register_workers([(0, 0)])
    t.register_job(job_id, "snap-update", 2)
    return t


def test_cancelled_job_counts_as_cancelled_not_failed():
    t = _tracker_with_job()
    t.job_completed("ps-snap-1000-42-7", False, outcome="cancelled")
    snap = t.snapshot()
    assert snap["pipelines"][0]["status"] == "cancelled"
    assert snap["counters"]["total_cancelled"] == 1
    assert snap["counters"]["total_failed"] == 0 and snap["counters"]["failed_by_kind"] == {}


def test_requeued_job_is_counted_nowhere():
    t = _tracker_with_job()
    t.job_completed("ps-snap-1000-42-7", False, outcome="requeued")
    snap = t.snapshot()
    assert snap["pipelines"][0]["status"] == "requeued"
    counters = snap["counters"]
    assert (counters["total_completed"], counters["total_failed"], counters["total_cancelled"]) == (0, 0, 0)


def test_plain_failure_still_counts_as_failed():
    t = _tracker_with_job()
    t.job_completed("ps-snap-1000-42-7", False)
    snap = t.snapshot()
    assert snap["pipelines"][0]["status"] == "failed"
    assert snap["counters"]["failed_by_kind"] == {"snap-update": 1}


@pytest.mark.parametrize("success, outcome", [(False, "lost"), (True, "cancelled")])
def test_bad_outcome_is_refused_and_changes_nothing(success, outcome):
    t = _tracker_with_job()
    with pytest.raises(TrackerError):
        t.job_completed("ps-snap-1000-42-7", success, outcome=outcome)
    assert t.snapshot()["pipelines"][0]["status"] == "queued"
