"""cuzk's `GetStatusResponse` (and `GetMetrics` text) -> the panel's snapshot (docs/SNAPSHOT.md).

The message is read as plain data through the same typed readers as the HTTP status
(statuspanel/fleet/shape.py), so a contradiction is `malformed` with its field named, as there.
What gRPC gives that HTTP does not: each GPU's name and VRAM and the jobs on it, queues per proof
kind, SRS residency tiers. What it lacks: pipelines and partitions (only the HTTP status, served
when the daemon's `status_listen` is set, has them). cuzk lists one `gpus` entry per GPU *worker*
(two per device by default), so entries are grouped by ordinal into devices; a 0 VRAM total is
unknown, not full; a 0 SRS size is "not tracked" (the current daemon sends 0).
"""
from __future__ import annotations

import math
from typing import Any, cast

from gpu_engine.kinds import kind_label
from gpu_engine.schema import Gpu, SourceSnapshot
from gpu_engine.vocabulary import IDLE, PROVING
from statuspanel.fleet.shape import Malformed, field, integer, objects

SRS_TIERS = {0: "hot", 1: "warm", 2: "cold"}   # cuzk's SRSStatus.Tier: pinned / mapped / on disk
# A daemon lists a few GPU workers, proof kinds and SRS entries; past this many in one list the
# answer is refused (`too-large`) before it is read: adapting 20,000 entries would take the
# collector's loop (or, in its thread pool, the interpreter's lock) for over a second.
MAX_ENTRIES = 1024
LISTS = ("gpus", "loaded_srs", "queues")
# The per-kind counters' samples, under the name the daemon writes and the one the parser gives a
# counter (with `_total`); the unlabelled totals share the latter and are told apart by the label.
PER_KIND_SAMPLES = {"cuzk_proofs_completed": "completed", "cuzk_proofs_completed_total": "completed",
                    "cuzk_proofs_failed": "failed", "cuzk_proofs_failed_total": "failed"}


def check_entry_counts(message: Any) -> None:
    """`too-large` when a list of GetStatusResponse holds more than MAX_ENTRIES entries."""
    for name in LISTS:
        count = len(getattr(message, name))
        if count > MAX_ENTRIES:
            raise Malformed(f"too large: {name} lists {count} entries, over the {MAX_ENTRIES} entry cap",
                            field=name, reason="too-large")


def message_dict(message: Any) -> dict[str, Any]:
    """A protobuf message as plain data (set fields only; unset ones read as their defaults)."""
    out: dict[str, Any] = {}
    for desc, value in message.ListFields():
        if desc.message_type is not None:
            if desc.is_repeated:
                out[desc.name] = [message_dict(v) for v in value]
            else:
                out[desc.name] = message_dict(value)
        elif desc.is_repeated:
            out[desc.name] = list(value)
        else:
            out[desc.name] = value
    return out


def adapt_status(doc: dict[str, Any], busy_since: dict[tuple[int, str], float] | None = None,
                 now: float = 0.0) -> dict[str, Any]:
    """The parts of a snapshot GetStatus gives: gpu_workers, gpus (with their jobs), queues, srs,
    counters' totals, uptime. `busy_since` (kept by the caller across polls) dates each worker's job
    from the first poll that saw it: gRPC says no durations, so they are observed ones."""
    workers: list[dict[str, Any]] = []
    devices: dict[int, dict[str, Any]] = {}
    seen: dict[tuple[int, str], float] = {}
    for i, (path, g) in enumerate(objects(doc, "gpus", "")):
        ordinal = integer(g, "ordinal", path, default=0)
        name = field(g, "name", (str,), path, default="")
        total = integer(g, "vram_total_bytes", path, default=0)
        free = integer(g, "vram_free_bytes", path, default=0)
        if total and free > total:
            raise Malformed(f"{path}.vram_free_bytes ({free}) must not exceed vram_total_bytes ({total})",
                            field=f"{path}.vram_free_bytes")
        job = field(g, "current_job_id", (str,), path, default="")
        kind = field(g, "current_proof_kind", (str,), path, default="")
        since = None
        if job:
            since = (busy_since or {}).get((i, job), now)
            seen[(i, job)] = since
        workers.append({"worker_id": i, "gpu_ordinal": ordinal, "state": PROVING if job else IDLE,
                        "current_job": job or None, "current_partition": None,
                        "current_proof_kind": kind or None, "current_proof_label": kind_label(kind) if kind else None,
                        "busy_secs": round(max(0.0, now - since), 3) if since is not None else 0.0, "error": None})
        device = devices.setdefault(ordinal, {
            "ordinal": ordinal, "name": name or f"GPU {ordinal}", "util_pct": None,
            "mem_used_bytes": total - free if total else None, "mem_total_bytes": total or None,
            "temp_c": None, "power_w": None, "workers": 0, "jobs": []})
        device["workers"] += 1
        if job:
            device["jobs"].append({"worker_id": i, "job_id": job, "proof_kind": kind,
                                   "proof_label": kind_label(kind) if kind else ""})
    if busy_since is not None:
        busy_since.clear()
        busy_since.update(seen)
    queues = []
    for path, q in objects(doc, "queues", ""):
        kind = field(q, "proof_kind", (str,), path, default="")
        queues.append({"proof_kind": kind, "proof_label": kind_label(kind) if kind else "",
                       "pending": integer(q, "pending", path, default=0),
                       "in_progress": integer(q, "in_progress", path, default=0)})
    srs = []
    for path, s in objects(doc, "loaded_srs", ""):
        tier = integer(s, "tier", path, default=0)
        srs.append({"circuit_id": field(s, "circuit_id", (str,), path, required=True),
                    "tier": SRS_TIERS.get(tier, f"tier {tier}"),
                    "size_bytes": integer(s, "size_bytes", path, default=0) or None,
                    "ref_count": integer(s, "ref_count", path, default=0)})
    return {
        "uptime_secs": float(integer(doc, "uptime_seconds", "", default=0)),
        "gpu_workers": workers,
        "gpus": [devices[o] for o in sorted(devices)],
        "queues": queues,
        "srs": srs,
        "total_completed": integer(doc, "total_proofs_completed", "", default=0),
        "total_failed": integer(doc, "total_proofs_failed", "", default=0),
        "queue_depth": sum(q["pending"] for q in queues),
    }


def grpc_only_snapshot(part: dict[str, Any], by_kind: dict[str, dict[str, int]] | None) -> SourceSnapshot:
    """A whole snapshot from gRPC alone: no pipelines (`partitions_visible` false says why); engine_id,
    seq and generated_at are stamped by `SourceState.snapshot`."""
    by_kind = by_kind or {}
    return {
        "engine_id": None, "seq": 0, "generated_at": "",
        "uptime_secs": part["uptime_secs"], "backend": "cuda",
        "memory": {"total_bytes": 0, "used_bytes": 0, "available_bytes": 0},
        "synthesis": {"max_concurrent": 0, "active": 0},
        "pipelines": [], "gpu_workers": part["gpu_workers"], "gpus": part["gpus"],
        "counters": {"total_completed": part["total_completed"], "total_failed": part["total_failed"],
                     "total_cancelled": 0, "completed_by_kind": by_kind.get("completed", {}),
                     "failed_by_kind": by_kind.get("failed", {}), "queue_depth": part["queue_depth"]},
        "queues": part["queues"], "srs": part["srs"],
        "partitions_visible": False,
        "consistency": [],
    }


def merge(http_snap: SourceSnapshot, part: dict[str, Any]) -> SourceSnapshot:
    """One engine from both: pipelines, partitions and workers from HTTP; GPUs (names, VRAM, jobs),
    queues and SRS tiers from gRPC (what HTTP says of a GPU, e.g. utilisation, is kept)."""
    snap = http_snap.copy()
    http_gpus: dict[int | None, Gpu] = {g.get("ordinal"): g for g in http_snap.get("gpus") or []}
    gpus: list[dict[str, Any]] = []
    for g in part["gpus"]:
        base = dict(http_gpus.get(g["ordinal"], {}))
        base.update({k: v for k, v in g.items() if v is not None})
        gpus.append(base)
    snap["gpus"] = cast("list[Gpu]", gpus)  # each the gRPC half's whole Gpu over what HTTP said of it
    snap["queues"], snap["srs"] = part["queues"], part["srs"]
    snap["partitions_visible"] = True
    return snap


def metrics_by_kind(text: str) -> dict[str, dict[str, int]]:
    """Completed and failed proofs per kind from GetMetrics' Prometheus text
    (`cuzk_proofs_completed{proof_kind}`, `cuzk_proofs_failed{proof_kind}`); malformed text or a
    count that is no non-negative whole number is `malformed`, the sample named."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, dict[str, int]] = {"completed": {}, "failed": {}}
    try:
        samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    except (ValueError, TypeError, IndexError) as exc:
        raise Malformed(f"GetMetrics.prometheus_text is no Prometheus text ({str(exc)[:120]})",
                        field="GetMetrics.prometheus_text") from None
    for sample in samples:
        if sample.name not in PER_KIND_SAMPLES or "proof_kind" not in sample.labels:
            continue
        kind = sample.labels["proof_kind"]
        value = sample.value
        where = f'GetMetrics.{sample.name}{{proof_kind="{kind}"}}'
        if not (math.isfinite(value) and value >= 0 and value == int(value)):
            raise Malformed(f"{where} must be a non-negative whole number, got {value!r}", field=where)
        out[PER_KIND_SAMPLES[sample.name]][kind] = int(value)
    return out
