"""The built-in rules as pure functions: each over hand-made snapshots and facts, its threshold and
its edge (at the threshold: nothing; past it: a condition with a message a person understands)."""
from __future__ import annotations

from statuspanel.alerts.rules import (
    Facts,
    Failure,
    engine_down,
    failure_burst,
    fmt_secs,
    gpu_idle_while_queued,
    memory_pressure,
    partition_stuck,
    queue_wait,
    source_down,
)
from statuspanel.alerts.specs import RULES, Effective


def defaults(rule: str, engine: str) -> Effective:
    spec = RULES[rule]
    return Effective(True, spec.threshold, spec.for_secs)


def local(**extra):
    snap = {"engine_id": "box-7", "seq": 1, "pipelines": [], "gpu_workers": [], "counters": {}, "memory": {}}
    snap.update(extra)
    return snap


def pipe(kind: str, *parts, status="running", started=10.0):
    return {"job_id": "job-1", "proof_kind": kind, "status": status, "started_secs_ago": started,
            "partitions": [dict(index=i, **p) for i, p in enumerate(parts)]}


def test_gpu_idle_counts_the_local_queue_and_names_the_kind() -> None:
    snap = local(gpu_workers=[{"worker_id": 1, "state": "idle"}, {"worker_id": 2, "state": "proving"}])
    (cond,) = gpu_idle_while_queued([snap], Facts(queued_by_kind={"snap-update": 6}), defaults)
    assert cond.subject == "W1" and cond.value == 6
    assert cond.message.replace("{held}", fmt_secs(252)) == \
        "W1 on box-7 idle for 4m 12s while 6 SnapDeals Update (ReplicaUpdate) jobs wait"
    assert gpu_idle_while_queued([snap], Facts(), defaults) == []


def test_partition_stuck_uses_five_times_the_p95_with_a_floor_and_a_ceiling() -> None:
    gpu = pipe("snap-update", {"state": "gpu", "gpu_ms": 61_000}, {"state": "gpu", "gpu_ms": 30_000})
    facts = Facts(p95_secs={("snap-update", "gpu"): 4.0})  # 5 x 4 s = 20 s, floored at 60 s
    (cond,) = partition_stuck([local(pipelines=[gpu])], facts, defaults)
    assert cond.subject == "job-1#0" and "in gpu for 1m 01s (limit 1m 00s, p95 4s)" in cond.message
    facts = Facts(p95_secs={("snap-update", "gpu"): 20.0})  # 100 s
    assert partition_stuck([local(pipelines=[gpu])], facts, defaults) == []
    no_history = pipe("porep-c2", {"state": "synthesizing", "synth_ms": 3_601_000})
    (cond,) = partition_stuck([local(pipelines=[no_history])], Facts(), defaults)
    assert "no history" in cond.message and "limit 1h 00m" in cond.message


def test_source_down_only_for_unreachable_or_malformed() -> None:
    snaps = [local(engine_id=f"s-{state}", source={"state": state, "error": "refused: connection refused"})
             for state in ("online", "stale", "unreachable", "malformed")]
    assert [c.engine for c in source_down(snaps, Facts(), defaults)] == ["s-unreachable", "s-malformed"]


def test_engine_down_past_its_heartbeat_threshold() -> None:
    facts = Facts(heartbeat_ages={"box-1": 59.0, "box-2": 61.0})
    (cond,) = engine_down([], facts, defaults)
    assert cond.engine == "box-2" and cond.message == "engine box-2: no heartbeat for 1m 01s"


def test_failure_burst_lists_the_last_reasons_newest_first() -> None:
    failures = [Failure(float(i), f"job j{i}", f"reason {i}") for i in range(4)]
    (cond,) = failure_burst([], Facts(failures={"box-1": failures}), defaults)
    assert cond.value == 4 and cond.message.endswith("last: job j3: reason 3; job j2: reason 2; job j1: reason 1")
    assert failure_burst([], Facts(failures={"box-1": failures[:2]}), defaults) == []


def test_memory_pressure_on_the_budget_and_on_a_long_admission_wait() -> None:
    snap = local(memory={"used_bytes": 91, "total_bytes": 100},
                 pipelines=[pipe("porep-c2", {"state": "pending"}, {"state": "gpu"}, started=301.0)])
    conds = memory_pressure([snap], Facts(), defaults)
    assert [(c.subject, round(c.value)) for c in conds] == [("memory", 91), ("job-1#0", 301)]
    snap = local(memory={"used_bytes": 90, "total_bytes": 100}, pipelines=[pipe("porep-c2", {"state": "pending"})])
    assert memory_pressure([snap], Facts(), defaults) == []


def test_queue_wait_names_the_oldest_job_of_the_kind() -> None:
    facts = Facts(queued_by_kind={"porep-c2": 4}, oldest_queued={"porep-c2": ("old-job", 1801.0)})
    (cond,) = queue_wait([], facts, defaults)
    assert cond.engine == "queue" and cond.subject == "porep-c2" and "old-job, has waited 30m 01s" in cond.message
    facts.oldest_queued["porep-c2"] = ("old-job", 1799.0)
    assert queue_wait([], facts, defaults) == []


def test_foreign_documents_with_wrong_types_are_read_without_errors() -> None:
    junk = {"engine_id": "x", "pipelines": "nope", "gpu_workers": [1, None, {"state": "idle"}], "memory": [],
            "counters": {"queue_depth": "many"}, "source": {"state": "online"}}
    for rule in (gpu_idle_while_queued, partition_stuck, memory_pressure, source_down):
        assert isinstance(rule([junk], Facts(), defaults), list)
