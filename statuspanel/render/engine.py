"""Snapshot -> template context -> HTML partial, rendered once per (engine_id, seq) per process.

The page and every WebSocket client share these renders: with hundreds of clients the partial and
the encoded frame are built once per snapshot, not once per client. The context builder reads the
snapshot defensively, because foreign engines (a cuzk `/status`) omit keys ours always sends.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from django.template.loader import render_to_string

from gpu_engine.kinds import kind_label
from gpu_engine.schema import SnapshotDocument
from statuspanel.render import fleet as fleet_render
from statuspanel.render.cache import LRU
from statuspanel.render.numbers import num
from statuspanel.fleet.cuzk_grpc.render import grpc_context
from gpu_engine.vocabulary import DONE, FAILED, FINALIZING, GPU, IDLE, PENDING, PHASES, RUNNING, SYNTHESIZING

ENGINE_TEMPLATE = "statuspanel/_engine.html"
GAUGE_YELLOW_PCT = 60.0
GAUGE_RED_PCT = 85.0
UNNAMED_ENGINE = "unnamed-engine"


html_cache: LRU[tuple[str, dict[str, Any]]] = LRU(256)


def engine_id_of(snap: SnapshotDocument) -> str:
    return str(snap.get("engine_id") or UNNAMED_ENGINE)


def snapshot_cache_key(snap: SnapshotDocument) -> tuple[str, int] | None:
    seq = snap.get("seq")
    return (engine_id_of(snap), seq) if isinstance(seq, int) else None


def render_engine_with_tally(snap: SnapshotDocument) -> tuple[str, dict[str, Any]]:
    """The engine partial for this snapshot and its fleet-summary tally; cached when the snapshot
    carries a seq (the tally's proofs/min rate is measured once per snapshot, at its render)."""
    def build() -> tuple[str, dict[str, Any]]:
        ctx = engine_context(snap)
        return render_to_string(ENGINE_TEMPLATE, {"e": ctx}), ctx["tally"]

    key = snapshot_cache_key(snap)
    return build() if key is None else html_cache.get_or_build(key, build)


def fleet_summary_of(snaps: Sequence[SnapshotDocument], offline: int = 0) -> dict[str, Any]:
    """The fleet summary of these snapshots, counted as the panel counts it (the page's first paint,
    and any other reader that wants the same numbers)."""
    return fleet_render.fleet_summary([render_engine_with_tally(s)[1] for s in snaps], offline=offline)


def render_engine(snap: SnapshotDocument) -> str:
    """The engine partial for this snapshot (cached as `render_engine_with_tally`)."""
    return render_engine_with_tally(snap)[0]


# -- context ------------------------------------------------------------------------------------
def memory_context(mem: Any) -> dict[str, Any] | None:
    if not isinstance(mem, dict):
        return None
    total, used = num(mem.get("total_bytes")), num(mem.get("used_bytes"))
    if not total or used is None:
        return None
    pct = max(0.0, min(100.0, 100.0 * used / total))
    level = "green" if pct < GAUGE_YELLOW_PCT else "yellow" if pct < GAUGE_RED_PCT else "red"
    available = num(mem.get("available_bytes"))
    return {"total": total, "used": used, "available": total - used if available is None else available,
            "pct": pct, "level": level}


# The duration field that grows while a partition is in each open phase, in display order.
_OPEN_PHASE_FIELD = {SYNTHESIZING: "synth_ms", GPU: "gpu_ms", FINALIZING: "finalize_ms"}


def partition_context(part: dict[str, Any], flagged: bool = False) -> dict[str, Any]:
    state = str(part.get("state") or PENDING)
    open_ms = _OPEN_PHASE_FIELD.get(state)
    return {
        "index": part.get("index"),
        "state": state,
        "phase_class": state if state in PHASES else "unknown",
        "synth_ms": num(part.get("synth_ms")),
        "gpu_ms": num(part.get("gpu_ms")),
        "finalize_ms": num(part.get("finalize_ms")),
        "open_field": open_ms,
        "worker_id": part.get("worker_id"),
        "error": part.get("error") or "",
        "inconsistent": flagged,
    }


def _phase_total(parts: list[dict[str, Any]], field: str) -> tuple[float | None, int]:
    """Sum of a phase's durations and how many of them are still open (the rate it grows at)."""
    values = [p[field] for p in parts if p[field] is not None]
    open_count = sum(1 for p in parts if p["open_field"] == field)
    return (sum(values) if values else None), open_count


def _elapsed(pipe: dict[str, Any]) -> float | None:
    """Time since the job started, or its run time once finished (then it no longer grows)."""
    started, finished = num(pipe.get("started_secs_ago")), num(pipe.get("finished_secs_ago"))
    if started is None:
        return None
    return max(0.0, started - finished) if finished is not None else started


def pipeline_context(pipe: dict[str, Any],
                     flagged: frozenset[tuple[str, int]] | set[tuple[str, int]] = frozenset()) -> dict[str, Any]:
    """One job's row; `flagged` holds the (job, partition) pairs the consistency check warns about."""
    job_id = str(pipe.get("job_id") or "")
    parts = [partition_context(p, isinstance(p.get("index"), int) and (job_id, p["index"]) in flagged)
             for p in pipe.get("partitions") or [] if isinstance(p, dict)]
    kind = str(pipe.get("proof_kind") or "")
    failed = sum(1 for p in parts if p["state"] == FAILED)
    totals = []
    for field in _OPEN_PHASE_FIELD.values():
        total, rate = _phase_total(parts, field)
        totals.append({"field": field, "ms": total, "rate": rate})
    return {
        "job_id": job_id,
        "proof_kind": kind,
        "proof_label": pipe.get("proof_label") or kind_label(kind),
        "status": pipe.get("status") or (FAILED if failed else RUNNING),
        "elapsed_secs": _elapsed(pipe),
        "total_partitions": pipe.get("total_partitions") or len(parts),
        "partitions_done": pipe.get("partitions_done") or sum(1 for p in parts if p["state"] == DONE),
        "partitions_failed": failed,
        "partitions": parts,
        "phase_totals": totals,
    }


def worker_context(worker: dict[str, Any], kinds_by_job: dict[str, str]) -> dict[str, Any]:
    job = worker.get("current_job")
    kind = worker.get("current_proof_kind") or (kinds_by_job.get(job) if job else None) or ""
    state = str(worker.get("state") or IDLE)
    return {
        "worker_id": worker.get("worker_id"),
        "gpu_ordinal": worker.get("gpu_ordinal"),
        "state": state,
        "current_job": job or "",
        "proof_kind": kind,
        "proof_label": worker.get("current_proof_label") or (kind_label(kind) if kind else ""),
        "current_partition": worker.get("current_partition"),
        "busy_secs": num(worker.get("busy_secs")),
        "error": worker.get("error") or "",
    }


def gpu_context(gpu: dict[str, Any]) -> dict[str, Any]:
    total, used = num(gpu.get("mem_total_bytes")), num(gpu.get("mem_used_bytes"))
    return {
        "ordinal": gpu.get("ordinal"),
        "name": gpu.get("name") or "",
        "util_pct": num(gpu.get("util_pct")),
        "mem_used": used,
        "mem_total": total,
        "mem_pct": 100.0 * used / total if total and used is not None else None,
        "temp_c": num(gpu.get("temp_c")),
        "power_w": num(gpu.get("power_w")),
    }


def counters_context(counters: Any) -> dict[str, Any]:
    counters = counters if isinstance(counters, dict) else {}
    done = counters.get("completed_by_kind") or {}
    failed = counters.get("failed_by_kind") or {}
    kinds = sorted(set(done) | set(failed))
    return {
        "total_completed": counters.get("total_completed") or 0,
        "total_failed": counters.get("total_failed") or 0,
        "total_cancelled": counters.get("total_cancelled") or 0,
        "queue_depth": counters.get("queue_depth") or 0,
        "by_kind": [{"kind": k, "label": kind_label(k), "done": done.get(k, 0), "failed": failed.get(k, 0)}
                    for k in kinds],
    }


def engine_context(snap: SnapshotDocument, now: float | None = None) -> dict[str, Any]:
    """Everything the engine partial shows, normalized so missing keys render as absent, not errors."""
    now = time.time() if now is None else now
    consistency = fleet_render.consistency_context(snap)
    pipes = [pipeline_context(p, consistency["cells"]) for p in snap.get("pipelines") or [] if isinstance(p, dict)]
    kinds_by_job = {p["job_id"]: p["proof_kind"] for p in pipes}
    synth_raw = snap.get("synthesis")
    synth: dict[str, Any] = synth_raw if isinstance(synth_raw, dict) else {}
    heartbeat = num(snap.get("heartbeat_secs"))
    published = num(snap.get("published_at"))
    online = True if published is None or heartbeat is None else now - published <= 2 * heartbeat
    source = fleet_render.source_context(snap)
    counters = counters_context(snap.get("counters"))
    completed = snap.get("counters", {}).get("total_completed") if isinstance(snap.get("counters"), dict) else None
    ppm = (fleet_render.rate_meter.observe(engine_id_of(snap), published or now, completed)
           if isinstance(completed, int) and not isinstance(completed, bool) else None)
    ctx: dict[str, Any] = {
        "engine_id": engine_id_of(snap),
        "named": bool(snap.get("engine_id")),
        "seq": snap.get("seq"),
        "backend": snap.get("backend") or "",
        "uptime_secs": num(snap.get("uptime_secs")),
        "published_at": published,
        "heartbeat_secs": heartbeat,
        "online": online,
        "memory": memory_context(snap.get("memory")),
        "synthesis": {"active": synth.get("active") or 0, "max": synth.get("max_concurrent") or 0},
        "counters": counters,
        "workers": [worker_context(w, kinds_by_job) for w in snap.get("gpu_workers") or [] if isinstance(w, dict)],
        "pipelines": pipes,
        "gpus": [gpu_context(g) for g in snap.get("gpus") or [] if isinstance(g, dict)],
        "source": source,
        # Durations tick between frames only while the data is current: a source that stopped
        # answering must not look as if its workers were still busy.
        "ticking": source is None or source["online"],
        # A source never reached has no data to show: its section is its summary row alone.
        "has_data": source is None or source["last_ok_secs_ago"] is not None,
        "consistency": consistency,
        "cuzk": fleet_render.cuzk_context(snap),
        "grpc": grpc_context(snap),  # a cuzk source's gRPC status: GPUs, queues, SRS tiers
        "proofs_per_min": ppm,
    }
    ctx["tally"] = fleet_render.engine_tally(ctx)
    ctx["tally_json"] = fleet_render.tally_json(ctx["tally"])
    return ctx
