"""Invariants every tracker snapshot must satisfy, and a clock tests can move by hand."""
from __future__ import annotations

from collections import Counter
from typing import Any

from gpu_engine.vocabulary import (
    COUNTER_KEYS,
    GPU_KEYS,
    JOB_STATUSES,
    PARTITION_KEYS,
    PHASES,
    PIPELINE_KEYS,
    SNAPSHOT_KEYS,
    WORKER_KEYS,
)


class FakeClock:
    """Monotonic seconds that only move when a test says so."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, secs: float) -> None:
        self.now += secs


def check_schema(snap: dict[str, Any]) -> None:
    assert set(SNAPSHOT_KEYS) <= snap.keys()
    assert {"total_bytes", "used_bytes", "available_bytes"} <= snap["memory"].keys()
    assert {"max_concurrent", "active"} <= snap["synthesis"].keys()
    assert set(COUNTER_KEYS) <= snap["counters"].keys()
    for pipe in snap["pipelines"]:
        assert set(PIPELINE_KEYS) <= pipe.keys()
        assert pipe["status"] in JOB_STATUSES
        for part in pipe["partitions"]:
            assert set(PARTITION_KEYS) <= part.keys()
            assert part["state"] in PHASES
    for worker in snap["gpu_workers"]:
        assert set(WORKER_KEYS) <= worker.keys()
        assert worker["state"] in ("idle", "proving", "error")
    for gpu in snap["gpus"]:
        assert set(GPU_KEYS) <= gpu.keys()


def check_invariants(snap: dict[str, Any]) -> None:
    """A worker is `proving` exactly when one partition in phase `gpu` names it; counters add up."""
    check_schema(snap)
    in_gpu: dict[Any, list[tuple[str, int]]] = {}
    synthesizing = 0
    for pipe in snap["pipelines"]:
        states = Counter(p["state"] for p in pipe["partitions"])
        assert pipe["total_partitions"] == len(pipe["partitions"])
        assert pipe["partitions_done"] == states["done"], pipe
        if pipe["status"] == "done":
            assert states["done"] == pipe["total_partitions"], pipe
        if pipe["status"] == "queued":
            assert states["pending"] == pipe["total_partitions"], pipe
        synthesizing += states["synthesizing"]
        for part in pipe["partitions"]:
            if part["state"] == "gpu":
                assert part["worker_id"] is not None
                in_gpu.setdefault(part["worker_id"], []).append((pipe["job_id"], part["index"]))
            if part["state"] == "failed":
                assert part["error"], part
            else:
                assert part["error"] is None, part
    workers = {w["worker_id"]: w for w in snap["gpu_workers"]}
    assert set(in_gpu) <= set(workers), f"partitions in gpu name unknown workers: {in_gpu}"
    for wid, w in workers.items():
        holders = in_gpu.get(wid, [])
        if w["state"] == "proving":
            assert holders == [(w["current_job"], w["current_partition"])], (w, holders)
            assert w["busy_secs"] >= 0
        else:
            assert holders == [], (w, holders)
            assert w["current_job"] is None and w["current_partition"] is None, w
            assert w["busy_secs"] == 0.0
    assert snap["synthesis"]["active"] == synthesizing
    counters = snap["counters"]
    assert counters["total_completed"] == sum(counters["completed_by_kind"].values())
    assert counters["total_failed"] == sum(counters["failed_by_kind"].values())
    visible_done = Counter(p["proof_kind"] for p in snap["pipelines"] if p["status"] == "done")
    visible_failed = Counter(p["proof_kind"] for p in snap["pipelines"] if p["status"] == "failed")
    for kind, n in visible_done.items():
        assert counters["completed_by_kind"].get(kind, 0) >= n
    for kind, n in visible_failed.items():
        assert counters["failed_by_kind"].get(kind, 0) >= n
    mem = snap["memory"]
    assert mem["available_bytes"] == mem["total_bytes"] - mem["used_bytes"]
