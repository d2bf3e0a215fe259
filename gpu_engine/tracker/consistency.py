"""The tracker-consistency check: does what the workers say agree with what the partitions say?

A partition in `gpu` must be proven by exactly the worker that says so, and a `proving` worker
must hold a partition in `gpu`. An unfixed cuzk daemon breaks this in its split-proving race (a
late `partition_gpu_end` of the previous partition marks the worker idle while it proves the next
one). Pure and defensive: it runs on every published snapshot, ours and foreign ones alike.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu_engine.schema import ConsistencyIssue
from gpu_engine.vocabulary import CONSISTENCY_PROBLEMS, GPU, NO_WORKER, NOT_IN_GPU, PROVING


def _key(job_id: Any, partition: Any) -> tuple[str, Any] | None:
    return (job_id, partition) if isinstance(job_id, str) and isinstance(partition, int) else None


def check_consistency(snap: Mapping[str, Any]) -> list[ConsistencyIssue]:
    """Every disagreement between `pipelines[].partitions[]` and `gpu_workers[]`, in snapshot order:
    `{"job_id", "partition", "worker_id", "problem", "message"}`; empty when consistent."""
    in_gpu: dict[tuple[str, int], Any] = {}
    for pipe in snap.get("pipelines") or ():
        if not isinstance(pipe, dict):
            continue
        for part in pipe.get("partitions") or ():
            if isinstance(part, dict) and part.get("state") == GPU:
                key = _key(pipe.get("job_id"), part.get("index"))
                if key is not None:
                    in_gpu[key] = part.get("worker_id")
    proving: dict[tuple[str, int], Any] = {}
    for worker in snap.get("gpu_workers") or ():
        if isinstance(worker, dict) and worker.get("state") == PROVING:
            key = _key(worker.get("current_job"), worker.get("current_partition"))
            if key is not None:
                proving.setdefault(key, worker.get("worker_id"))
    problems: list[ConsistencyIssue] = []
    for (job_id, partition), worker_id in in_gpu.items():
        if (job_id, partition) not in proving:
            problems.append(_problem(job_id, partition, worker_id, NO_WORKER))
    for (job_id, partition), worker_id in proving.items():
        if (job_id, partition) not in in_gpu:
            problems.append(_problem(job_id, partition, worker_id, NOT_IN_GPU))
    return problems


def _problem(job_id: str, partition: int, worker_id: Any, problem: str) -> ConsistencyIssue:
    return {"job_id": job_id, "partition": partition, "worker_id": worker_id, "problem": problem,
            "message": CONSISTENCY_PROBLEMS[problem]}
