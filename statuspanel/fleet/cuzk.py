"""cuzk's `GET /status` (its StatusSnapshot) -> the panel's snapshot (docs/SNAPSHOT.md, docs/FLEET.md).

cuzk is the Rust proving engine whose tracker this project re-makes, so most fields carry over by
name. What differs: cuzk has no `finalizing` phase, no labels, no per-partition worker, workers may
report a `busy` flag instead of a `state`; and it shows what only it has, SRS/PCE allocations
(bytes, evictability) and buffer counters, which are passed on under `allocations` and `buffers`.
Known kinds get their full label, unknown kinds and states are shown whole as they come. Missing
optional fields are tolerated; a field of the wrong type raises `Malformed` naming it.
"""
from __future__ import annotations

from typing import Any

from gpu_engine.kinds import kind_label
from gpu_engine.schema import Gpu, GpuWorker, Partition, Pipeline, SourceSnapshot
from gpu_engine.tracker.consistency import check_consistency
from gpu_engine.vocabulary import DONE, ERROR, FAILED, IDLE, PENDING, PROVING, QUEUED, RUNNING
from statuspanel.fleet.shape import Malformed, count_map, field, integer, number, objects, section

ALLOCATION_POOLS = ("srs", "pce")
_ID = (int,)  # worker ids are ints, in cuzk and here


def adapt_cuzk(doc: Any) -> SourceSnapshot:
    """The panel snapshot for one cuzk status document (engine_id, seq, generated_at and source are
    the collector's: `SourceState.snapshot` stamps them on every copy it publishes)."""
    if not isinstance(doc, dict):
        raise Malformed("the status document must be a JSON object", field="(document)")
    workers = [_worker(path, w) for path, w in objects(doc, "gpu_workers", "")]
    held: dict[tuple[str | None, int | None], int] = {(w["current_job"], w["current_partition"]): w["worker_id"]
            for w in workers if w["state"] == PROVING and w["current_job"] is not None}
    kinds: dict[str, str] = {}
    pipelines = [_pipeline(path, p, held, kinds) for path, p in objects(doc, "pipelines", "")]
    for w in workers:
        kind = w["current_proof_kind"] or kinds.get(w["current_job"] or "")
        w["current_proof_kind"] = kind
        w["current_proof_label"] = kind_label(kind) if kind else None
    memory = section(doc, "memory")
    total = integer(memory, "total_bytes", "memory", default=0)
    used = integer(memory, "used_bytes", "memory", default=0)
    synthesis = section(doc, "synthesis")
    counters = section(doc, "counters")
    snap: SourceSnapshot = {
        "engine_id": None,
        "seq": 0,
        "generated_at": "",
        "uptime_secs": number(doc, "uptime_secs", "", default=0.0),
        "backend": field(doc, "backend", (str,), "", default=""),  # only what the daemon says
        "memory": {"total_bytes": total, "used_bytes": used,
                   "available_bytes": integer(memory, "available_bytes", "memory", default=max(0, total - used))},
        "synthesis": {"max_concurrent": integer(synthesis, "max_concurrent", "synthesis", default=0),
                      "active": integer(synthesis, "active", "synthesis", default=0)},
        "pipelines": pipelines,
        "gpu_workers": workers,
        "gpus": [_gpu(path, g) for path, g in objects(doc, "gpus", "")],
        "counters": {
            "total_completed": integer(counters, "total_completed", "counters", default=0),
            "total_failed": integer(counters, "total_failed", "counters", default=0),
            "total_cancelled": integer(counters, "total_cancelled", "counters", default=0),
            "completed_by_kind": count_map(counters, "completed_by_kind", "counters"),
            "failed_by_kind": count_map(counters, "failed_by_kind", "counters"),
            "queue_depth": integer(counters, "queue_depth", "counters", default=0),
        },
        "allocations": _allocations(section(doc, "allocations")),
        "buffers": count_map(doc, "buffers", ""),
        "consistency": [],
    }
    snap["consistency"] = check_consistency(snap)
    return snap


def _worker(path: str, w: dict[str, Any]) -> GpuWorker:
    worker_id = field(w, "worker_id", _ID, path, required=True)
    state = field(w, "state", (str,), path)
    if state is None:  # older daemons say only whether the worker is busy
        busy = field(w, "busy", (bool,), path, default=False)
        state = PROVING if busy else IDLE
    job = field(w, "current_job", (str,), path)
    partition = integer(w, "current_partition", path)
    return {
        "worker_id": worker_id,
        "gpu_ordinal": integer(w, "gpu_ordinal", path, default=0),
        "state": state,
        "current_job": job,
        "current_partition": partition,
        "current_proof_kind": field(w, "current_proof_kind", (str,), path),
        "current_proof_label": None,
        "busy_secs": number(w, "busy_secs", path, default=0.0),
        "error": field(w, "error", (str,), path, default=None if state != ERROR else "error"),
    }


def _pipeline(path: str, p: dict[str, Any], held: dict[tuple[str | None, int | None], int],
              kinds: dict[str, str]) -> Pipeline:
    job_id = field(p, "job_id", (str,), path, required=True)
    kind = field(p, "proof_kind", (str,), path, default="")
    kinds[job_id] = kind
    parts: list[Partition] = []
    for i, (ppath, q) in enumerate(objects(p, "partitions", path)):
        index = integer(q, "index", ppath, default=i)
        state = field(q, "state", (str,), ppath, default=PENDING)
        parts.append({
            "index": index,
            "state": state,
            "synth_ms": number(q, "synth_ms", ppath),
            "gpu_ms": number(q, "gpu_ms", ppath),
            "finalize_ms": number(q, "finalize_ms", ppath),
            # cuzk's partitions do not name their worker; the worker that says it holds one does
            "worker_id": field(q, "worker_id", _ID, ppath, default=held.get((job_id, index))),
            "error": field(q, "error", (str,), ppath),
        })
    total = integer(p, "total_partitions", path, default=len(parts))
    done = sum(1 for q in parts if q["state"] == DONE)
    failed = sum(1 for q in parts if q["state"] == FAILED)
    if parts and done == len(parts):
        status = DONE
    else:
        status = RUNNING if any(q["state"] != PENDING for q in parts) else QUEUED
    return {
        "job_id": job_id,
        "proof_kind": kind,
        "proof_label": kind_label(kind) if kind else "",
        "status": field(p, "status", (str,), path, default=status),
        "started_secs_ago": number(p, "started_secs_ago", path, default=0.0),
        "finished_secs_ago": number(p, "finished_secs_ago", path),
        "total_partitions": total,
        "partitions_done": integer(p, "partitions_done", path, default=done),
        "partitions_failed": integer(p, "partitions_failed", path, default=failed),
        "partitions": parts,
    }


def _gpu(path: str, g: dict[str, Any]) -> Gpu:
    return {
        "ordinal": integer(g, "ordinal", path, default=0),
        "name": field(g, "name", (str,), path),
        "util_pct": number(g, "util_pct", path),
        "mem_used_bytes": integer(g, "mem_used_bytes", path),
        "mem_total_bytes": integer(g, "mem_total_bytes", path),
        "temp_c": field(g, "temp_c", (int, float), path),
        "power_w": number(g, "power_w", path),
    }


def _allocations(raw: dict[str, Any]) -> dict[str, Any]:
    """SRS and PCE allocations: circuit, bytes, how long unused, whether it may be evicted."""
    out: dict[str, Any] = {}
    for pool in ALLOCATION_POOLS:
        rows = []
        for path, a in objects(raw, pool, "allocations"):
            rows.append({
                "circuit_id": field(a, "circuit_id", (str,), path, required=True),
                "bytes": integer(a, "bytes", path, default=0),
                "last_used_secs_ago": number(a, "last_used_secs_ago", path),
                "evictable": field(a, "evictable", (bool,), path, default=False),
            })
        out[pool] = rows
    return out
