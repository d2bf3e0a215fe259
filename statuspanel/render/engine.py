"""Snapshot -> template context -> HTML partial, rendered once per (engine_id, seq) per process.

The page and every WebSocket client share these renders: with hundreds of clients the partial and
the encoded frame are built once per snapshot, not once per client. The context builder reads the
snapshot defensively, because foreign engines (a cuzk `/status`) omit keys ours always sends.
"""
from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

from django.template.loader import render_to_string

from gpu_engine.kinds import kind_label
from gpu_engine.schema import SnapshotDocument
from gpu_engine.vocabulary import DONE, FAILED, FINALIZING, GPU, IDLE, PENDING, PHASES, RUNNING, SYNTHESIZING
from statuspanel.fleet.cuzk_grpc.render import grpc_context
from statuspanel.render import fleet as fleet_render
from statuspanel.render import summary
from statuspanel.render.cache import LRU
from statuspanel.render.numbers import num

ENGINE_TEMPLATE = "statuspanel/_engine.html"
GAUGE_YELLOW_PCT = 60.0
GAUGE_RED_PCT = 85.0
UNNAMED_ENGINE = "unnamed-engine"
_INDENT = re.compile(r"\n[ \t]+")


html_cache: LRU[tuple[str, dict[str, Any]]] = LRU(256, per_engine=4)  # the newest 4 snapshots of each engine


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
        return _section(ctx), ctx["tally"]

    key = snapshot_cache_key(snap)
    return build() if key is None else html_cache.get_or_build(key, build)


def fleet_summary_of(snaps: Sequence[SnapshotDocument], offline: int = 0) -> dict[str, Any]:
    """The fleet summary of these snapshots, counted as the panel counts it (the page's first paint,
    and any other reader that wants the same numbers)."""
    return fleet_render.fleet_summary([render_engine_with_tally(s)[1] for s in snaps], offline=offline)


def render_engine(snap: SnapshotDocument) -> str:
    """The engine partial for this snapshot (cached as `render_engine_with_tally`)."""
    return render_engine_with_tally(snap)[0]


def render_too_large(snap: SnapshotDocument, tally: dict[str, Any], size: int, limit: int) -> str:
    """The small section of an engine whose frame would not fit even summarised: its header, the
    tally of the whole snapshot (the fleet summary still counts it), and where the data is."""
    ctx = engine_context(snap)
    ctx["too_large"] = {"bytes": size, "limit": limit}
    ctx["tally"], ctx["tally_json"] = tally, fleet_render.tally_json(tally)
    return _section(ctx)


def _section(ctx: dict[str, Any]) -> str:
    """The engine partial without the templates' indentation: a section travels to every viewer at
    every change, and a third of its bytes were leading spaces (the DOM is the same)."""
    return _INDENT.sub("\n", render_to_string(ENGINE_TEMPLATE, {"e": ctx}))


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


def _never_started(part: dict[str, Any]) -> bool:
    return part["synth_ms"] is None and part["gpu_ms"] is None and part["finalize_ms"] is None


def _elapsed(pipe: dict[str, Any]) -> float | None:
    """Time since the job started, or its run time once finished (then it no longer grows)."""
    started, finished = num(pipe.get("started_secs_ago")), num(pipe.get("finished_secs_ago"))
    if started is None:
        return None
    return max(0.0, started - finished) if finished is not None else started


def _phase_counts(raw: list[dict[str, Any]]) -> tuple[dict[str, int], list[dict[str, Any]], int]:
    """Partitions per state, each phase's total and open count, and the failed partitions that never
    started, over every partition of a job in one cheap pass (cells are built only for those shown)."""
    states: dict[str, int] = {}
    sums: dict[str, list[Any]] = {field: [None, 0] for field in _OPEN_PHASE_FIELD.values()}
    not_run = 0
    for part in raw:
        state = str(part.get("state") or PENDING)
        states[state] = states.get(state, 0) + 1
        open_field = _OPEN_PHASE_FIELD.get(state)
        started = False
        for field, acc in sums.items():
            value = num(part.get(field))
            if value is not None:
                started = True
                acc[0] = value if acc[0] is None else acc[0] + value
            if open_field == field:
                acc[1] += 1
        if state == FAILED and not started:
            not_run += 1
    return states, [{"field": f, "ms": acc[0], "rate": acc[1]} for f, acc in sums.items()], not_run


def pipeline_context(pipe: dict[str, Any], flagged: frozenset[tuple[str, int]] | set[tuple[str, int]] = frozenset(),
                     snap: SnapshotDocument | None = None) -> dict[str, Any]:
    """One job's row; `flagged` holds the (job, partition) pairs the consistency check warns about.
    At most PANEL_MAX_PARTITION_CELLS cells are built; counts and totals cover every partition."""
    job_id = str(pipe.get("job_id") or "")
    raw, kept = summary.shown_partitions(pipe)
    parts = [partition_context(p, isinstance(p.get("index"), int) and (job_id, p["index"]) in flagged)
             for p in kept]
    kind = str(pipe.get("proof_kind") or "")
    states, totals, not_run = _phase_counts(raw)
    # A partition failed before any phase started was never run (its job stopped first): the API's
    # partition runs list only the ones that ran, so the panel counts them apart.
    failed = states.get(FAILED, 0) - not_run
    hidden = summary.hidden_counts(raw, kept, "state")
    return {
        "job_id": job_id,
        "proof_kind": kind,
        "proof_label": pipe.get("proof_label") or kind_label(kind),
        "status": pipe.get("status") or (FAILED if failed or not_run else RUNNING),
        "elapsed_secs": _elapsed(pipe),
        "total_partitions": pipe.get("total_partitions") or len(parts),
        "partitions_done": pipe.get("partitions_done") or states.get(DONE, 0),
        "partitions_failed": failed,
        "partitions_not_run": not_run,
        "reason": next((p["error"] for p in parts if p["error"] and not _never_started(p)),
                       next((p["error"] for p in parts if p["error"]), "")),
        "partitions": parts,
        "partitions_hidden": hidden,
        "partition_states": states,
        "api_url": summary.job_api_url(snap or {}, job_id) if hidden["count"] else "",
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
    # Huge engines are summarised (render/summary.py): bounded cards and cells, the rest counted.
    all_pipes, kept_pipes = summary.shown_pipelines(snap)
    pipes = [pipeline_context(p, consistency["cells"], snap) for p in kept_pipes]
    kinds_by_job = {p["job_id"]: p["proof_kind"] for p in pipes}
    all_workers, kept_workers = summary.shown_workers(snap)
    # Every job's partitions by state, for the tally: the hidden jobs' too.
    phase_counts: dict[str, int] = {}
    for pipe in pipes:
        for state, n in pipe["partition_states"].items():
            phase_counts[state] = phase_counts.get(state, 0) + n
    kept_ids = {id(p) for p in kept_pipes}
    for pipe in all_pipes:
        if id(pipe) not in kept_ids:
            for part in summary.dicts(pipe.get("partitions")):
                state = str(part.get("state") or PENDING)
                phase_counts[state] = phase_counts.get(state, 0) + 1
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
        "workers": [worker_context(w, kinds_by_job) for w in kept_workers],
        "workers_hidden": summary.hidden_counts(all_workers, kept_workers, "state"),
        # (state, GPU) of every worker, shown or not: the fleet summary counts them all.
        "worker_states": [(str(w.get("state") or IDLE), w.get("gpu_ordinal")) for w in all_workers],
        "pipelines": pipes,
        "pipelines_hidden": summary.hidden_counts(all_pipes, kept_pipes, "status"),
        "jobs_total": len(all_pipes),
        "phase_counts": phase_counts,
        "api_url": summary.api_url(snap),
        "too_large": None,
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
