"""The snapshot matches the schema of docs/SNAPSHOT.md and its open durations grow against now."""
from __future__ import annotations

import json
from datetime import datetime, timezone

from gpu_engine.budget import MemoryBudget
from gpu_engine.tracker import StatusTracker
from tests.tracker.invariants import FakeClock, check_invariants


def test_empty_snapshot_has_every_key_and_zero_memory() -> None:
    snap = StatusTracker(backend="cuda", synth_max=3).snapshot()
    check_invariants(snap)
    assert snap["engine_id"] is None
    assert snap["backend"] == "cuda"
    assert snap["memory"] == {"total_bytes": 0, "used_bytes": 0, "available_bytes": 0}
    assert snap["synthesis"] == {"max_concurrent": 3, "active": 0}
    assert snap["pipelines"] == [] and snap["gpu_workers"] == [] and snap["gpus"] == []
    generated = datetime.fromisoformat(snap["generated_at"])
    assert generated.utcoffset() == timezone.utc.utcoffset(None)
    assert abs((datetime.now(timezone.utc) - generated).total_seconds()) < 60
    json.dumps(snap)


def test_memory_comes_from_the_budget() -> None:
    budget = MemoryBudget(1000)
    t = StatusTracker(budget=budget)
    assert budget.acquire(300)
    assert t.snapshot()["memory"] == {"total_bytes": 1000, "used_bytes": 300, "available_bytes": 700}


def test_open_phases_grow_and_closed_phases_freeze(clock: FakeClock) -> None:
    t = StatusTracker(clock=clock)
    t.register_workers([(0, 0)])
    t.register_job("j", "porep-c2", 10)
    t.partition_synth_start("j", 0)
    clock.advance(1.0)
    snap = t.snapshot()
    assert snap["synthesis"]["active"] == 1
    assert snap["pipelines"][0]["partitions"][0]["synth_ms"] == 1000.0
    clock.advance(1.0)
    assert t.snapshot()["pipelines"][0]["partitions"][0]["synth_ms"] == 2000.0
    t.partition_synth_end("j", 0)
    t.partition_gpu_start("j", 0, 0)
    clock.advance(3.0)
    snap = t.snapshot()
    part = snap["pipelines"][0]["partitions"][0]
    assert (part["synth_ms"], part["gpu_ms"], part["finalize_ms"]) == (2000.0, 3000.0, None)
    assert snap["gpu_workers"][0]["busy_secs"] == 3.0
    assert snap["pipelines"][0]["started_secs_ago"] == 5.0
    assert snap["uptime_secs"] == 5.0
    assert snap["pipelines"][0]["partitions"][1]["synth_ms"] is None


def test_backend_gpus_and_queue_depth_are_reported() -> None:
    t = StatusTracker()
    seq = t.seq
    t.set_backend("cuda")
    t.set_gpus([{"ordinal": 0, "name": "NVIDIA H200", "util_pct": 97}])
    t.set_queue_depth(12)
    snap = t.snapshot()
    check_invariants(snap)
    assert snap["seq"] == seq + 3
    assert snap["backend"] == "cuda"
    assert snap["gpus"] == [{"ordinal": 0, "name": "NVIDIA H200", "util_pct": 97, "mem_used_bytes": None,
                             "mem_total_bytes": None, "temp_c": None, "power_w": None}]
    assert snap["counters"]["queue_depth"] == 12


def test_snapshot_is_a_copy() -> None:
    t = StatusTracker()
    t.set_gpus([{"ordinal": 0}])
    t.register_job("j", "window-post", 1)
    snap = t.snapshot()
    snap["gpus"][0]["name"] = "mutated"
    snap["pipelines"][0]["partitions"].clear()
    snap["counters"]["completed_by_kind"]["x"] = 1
    again = t.snapshot()
    assert again["gpus"][0]["name"] is None
    assert len(again["pipelines"][0]["partitions"]) == 1
    assert again["counters"]["completed_by_kind"] == {}


def test_pipeline_status_moves_queued_running_done() -> None:
    t = StatusTracker()
    t.register_workers([(0, 0)])
    t.register_job("j", "window-post", 1)
    assert t.snapshot()["pipelines"][0]["status"] == "queued"
    t.partition_synth_start("j", 0)
    assert t.snapshot()["pipelines"][0]["status"] == "running"
    t.partition_synth_end("j", 0)
    t.partition_gpu_start("j", 0, 0)
    t.partition_gpu_end("j", 0, 0)
    t.job_completed("j", True)
    assert t.snapshot()["pipelines"][0]["status"] == "done"
