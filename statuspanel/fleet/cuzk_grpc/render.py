"""What the engine's section shows of a cuzk daemon's gRPC status: each GPU's name, VRAM used/total
and the jobs its workers run; pending / in progress per proof kind; SRS entries with their tier; and,
for a daemon watched through gRPC alone, that partitions need its HTTP status (`status_listen`).

Read defensively, like the rest of the panel's contexts (templates/statuspanel/engine/_grpc.html):
a snapshot may come from anywhere and miss any key.
"""
from __future__ import annotations

from typing import Any

from gpu_engine.schema import SnapshotDocument


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def grpc_context(snap: SnapshotDocument) -> dict[str, Any] | None:
    """None for an engine without gRPC data (every engine but a cuzk source with a gRPC target)."""
    queues, srs = snap.get("queues"), snap.get("srs")
    if not isinstance(queues, list) and not isinstance(srs, list):
        return None
    gpus = []
    for g in snap.get("gpus") or []:
        if not isinstance(g, dict):
            continue
        total, used = _int(g.get("mem_total_bytes")), _int(g.get("mem_used_bytes"))
        jobs = [{"worker_id": _int(j.get("worker_id")), "job_id": _str(j.get("job_id")),
                 "proof_kind": _str(j.get("proof_kind")), "proof_label": _str(j.get("proof_label"))}
                for j in g.get("jobs") or [] if isinstance(j, dict)]
        gpus.append({"ordinal": _int(g.get("ordinal")), "name": _str(g.get("name")), "mem_total": total,
                     "mem_used": used,
                     "mem_pct": round(100.0 * used / total, 1) if total and used is not None else None,
                     "workers": _int(g.get("workers")), "jobs": jobs})
    queue_rows = [{"proof_kind": _str(q.get("proof_kind")), "proof_label": _str(q.get("proof_label")),
                   "pending": _int(q.get("pending")) or 0, "in_progress": _int(q.get("in_progress")) or 0}
                  for q in queues or [] if isinstance(q, dict)]
    srs_rows = [{"circuit_id": _str(s.get("circuit_id")), "tier": _str(s.get("tier")),
                 "size_bytes": _int(s.get("size_bytes")), "ref_count": _int(s.get("ref_count"))}
                for s in srs or [] if isinstance(s, dict)]
    return {
        "gpus": gpus,
        "queues": queue_rows,
        "pending": sum(q["pending"] for q in queue_rows),
        "in_progress": sum(q["in_progress"] for q in queue_rows),
        "srs": srs_rows,
        "grpc_only": snap.get("partitions_visible") is False,
    }
