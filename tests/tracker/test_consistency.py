"""The tracker-consistency check: partitions in `gpu` without a proving worker, workers proving a partition
that is not in `gpu`. Checked on our tracker's snapshots and on cuzk documents of the race sequence."""
from __future__ import annotations

from gpu_engine.tracker import StatusTracker
from gpu_engine.tracker.consistency import check_consistency
from gpu_engine.vocabulary import CONSISTENCY_KEYS
from tests.fleet.cuzk_server import RACE_JOB, load_fixture, race_steps


def test_our_tracker_is_consistent_and_says_so_in_every_snapshot() -> None:
    t = StatusTracker()
    t.register_workers([(0, 0)])
    t.register_job("job-A", "porep-c2", 2)
    t.partition_synth_start("job-A", 0)
    t.partition_synth_end("job-A", 0)
    t.partition_gpu_start("job-A", 0, 0)
    assert t.snapshot()["consistency"] == []


def test_the_fixture_is_consistent() -> None:
    assert check_consistency(load_fixture()) == []


def test_the_race_names_each_partition_in_gpu_with_an_idle_worker() -> None:
    steps = dict(race_steps())
    assert check_consistency(steps["consistent"]) == []
    assert check_consistency(steps["settled"]) == []
    race = check_consistency(steps["race"])
    assert [(p["job_id"], p["partition"], p["problem"]) for p in race] == [
        (RACE_JOB, 5, "no-worker"), (RACE_JOB, 6, "no-worker")]
    assert race[0]["worker_id"] is None        # cuzk's partitions do not name their worker
    assert all(set(CONSISTENCY_KEYS) <= p.keys() for p in race)
    assert "no worker is proving it" in race[0]["message"]


def test_a_worker_proving_a_partition_not_in_gpu_is_named() -> None:
    problems = check_consistency(dict(race_steps())["orphan-worker"])
    assert [(p["job_id"], p["partition"], p["worker_id"], p["problem"]) for p in problems] == [
        (RACE_JOB, 7, 0, "not-in-gpu")]


def test_a_worker_proving_a_job_that_is_not_shown_is_named() -> None:
    snap = {"pipelines": [], "gpu_workers": [{"worker_id": 3, "state": "proving", "current_job": "gone",
                                              "current_partition": 0}]}
    assert check_consistency(snap)[0]["problem"] == "not-in-gpu"


def test_garbage_entries_are_ignored_not_raised_on() -> None:
    snap = {"pipelines": [None, {"job_id": 5, "partitions": "x"}, {"job_id": "j", "partitions": [3, {"state": "gpu"}]}],
            "gpu_workers": ["w", {"state": "proving"}]}
    assert check_consistency(snap) == []
    assert check_consistency({}) == []
