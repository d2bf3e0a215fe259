"""Formatting of a StatusTracker snapshot, done outside the tracker's lock.

The tracker copies its state into plain tuples under the lock; this module turns them into the
JSON document of docs/SNAPSHOT.md. Durations of a phase still open are measured against
`now`, so they grow from one snapshot to the next; a phase never entered is None.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any, cast

from gpu_engine.kinds import kind_label
from gpu_engine.schema import Gpu, GpuWorker, Partition, Pipeline, Snapshot
from gpu_engine.tracker.consistency import check_consistency
from gpu_engine.vocabulary import FAILED, QUEUED, RUNNING


def _utc_now_iso() -> str:
    return datetime.fromtimestamp(time.time(), timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def _ms(start: float | None, end: float | None, now: float) -> float | None:
    """Milliseconds of a phase (growing against now while open), rounded: the snapshot is sent
    to every client ten times a second, and full float precision triples its size."""
    if start is None:
        return None
    return round(((now if end is None else end) - start) * 1000.0, 1)


def _partitions(rows: list[tuple[Any, ...]], now: float) -> tuple[list[Partition], int]:
    out: list[Partition] = []
    append = out.append
    failed = 0
    for index, (state, ss, se, gs, ge, fs, fe, worker_id, error) in enumerate(rows):
        if state == FAILED:
            failed += 1
        append({
            "index": index,
            "state": state,
            "synth_ms": _ms(ss, se, now),
            "gpu_ms": _ms(gs, ge, now),
            "finalize_ms": _ms(fs, fe, now),
            "worker_id": worker_id,
            "error": error,
        })
    return out, failed


def format_snapshot(now: float, state: dict[str, Any], memory: tuple[int, int], jobs: list[tuple[Any, ...]],
                    workers: list[tuple[Any, ...]]) -> Snapshot:
    """Build the snapshot dict from the copies taken under the tracker's lock."""
    pipelines: list[Pipeline] = []
    for job_id, kind, label, registered, running, finished_at, outcome, done, total, rows in jobs:
        parts, failed = _partitions(rows, now)
        if finished_at is not None:
            status = outcome
        else:
            status = RUNNING if running else QUEUED
        pipelines.append({
            "job_id": job_id,
            "proof_kind": kind,
            "proof_label": label,
            "status": status,
            "started_secs_ago": round(now - registered, 3),
            "finished_secs_ago": None if finished_at is None else round(now - finished_at, 3),
            "total_partitions": total,
            "partitions_done": done,
            "partitions_failed": failed,
            "partitions": parts,
        })
    gpu_workers: list[GpuWorker] = [
        {
            "worker_id": worker_id,
            "gpu_ordinal": ordinal,
            "state": wstate,
            "current_job": job_id,
            "current_partition": partition,
            "current_proof_kind": kind,
            "current_proof_label": None if kind is None else kind_label(kind),
            "busy_secs": 0.0 if busy_since is None else round(now - busy_since, 3),
            "error": error,
        }
        for worker_id, ordinal, wstate, job_id, partition, kind, busy_since, error in workers
    ]
    total, used = memory
    snap: Snapshot = {
        "engine_id": None,
        "seq": state["seq"],
        "generated_at": _utc_now_iso(),
        "uptime_secs": state["uptime"],
        "backend": state["backend"],
        "memory": {"total_bytes": total, "used_bytes": used, "available_bytes": total - used},
        "synthesis": {"max_concurrent": state["synth_max"], "active": state["synth_active"]},
        "pipelines": pipelines,
        "gpu_workers": gpu_workers,
        "gpus": [cast(Gpu, dict(g)) for g in state["gpus"]],  # rows of GPU_KEYS (set_gpus)
        "counters": {
            "total_completed": state["total_completed"],
            "total_failed": state["total_failed"],
            "total_cancelled": state["total_cancelled"],
            "completed_by_kind": state["completed_by_kind"],
            "failed_by_kind": state["failed_by_kind"],
            "queue_depth": state["queue_depth"],
        },
        "consistency": [],
    }
    snap["consistency"] = check_consistency(snap)  # our tracker keeps it empty; shown for every engine alike
    return snap
