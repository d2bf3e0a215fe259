"""What the panel shows of a huge engine: at most so many worker cards, jobs and partition cells per
job, the rest counted, the whole data one API call away.

A fleet source with thousands of workers or a job with thousands of partitions would otherwise make
a render cost time in proportion to it and a WebSocket frame larger than the transport sends (the
stream would close for every viewer). The same selection serves the engine partial and the
summarised snapshot a frame carries when the full one does not fit (`statuspanel.stream.frames`):
what is drawn is what is sent. Which items are shown: the ones that need attention first (errors,
failures, work in flight), then the rest in their own order; shown items keep that order.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from django.conf import settings
from django.urls import reverse

from gpu_engine.schema import SnapshotDocument
from gpu_engine.vocabulary import DONE, ERROR, FAILED, FINALIZING, GPU, IDLE, PENDING, PROVING, SYNTH_DONE, SYNTHESIZING

# Lower ranks are shown first when not everything fits.
PARTITION_RANK = {FAILED: 0, GPU: 1, FINALIZING: 2, SYNTHESIZING: 3, SYNTH_DONE: 4, PENDING: 5, DONE: 6}
WORKER_RANK = {ERROR: 0, PROVING: 1, IDLE: 2}
PIPELINE_RANK = {"failed": 0, "running": 1, "queued": 2}
# Keys a summarised snapshot keeps whatever happens: small, fixed-size parts.
SMALL_KEYS = ("engine_id", "seq", "generated_at", "uptime_secs", "backend", "memory", "synthesis", "source",
              "published_at", "heartbeat_secs")
TRUNCATED_KEY = "truncated"


def max_worker_cards() -> int:
    return int(settings.PANEL_MAX_WORKER_CARDS)


def max_partition_cells() -> int:
    return int(settings.PANEL_MAX_PARTITION_CELLS)


def max_pipelines() -> int:
    return int(settings.PANEL_MAX_PIPELINES)


def shown(items: Sequence[dict[str, Any]], cap: int, rank: Callable[[dict[str, Any]], int]) -> list[dict[str, Any]]:
    """At most `cap` of `items`: the lowest-ranked first, kept in their original order."""
    if len(items) <= cap:
        return list(items)
    keep = sorted(range(len(items)), key=lambda i: (rank(items[i]), i))[:cap]
    return [items[i] for i in sorted(keep)]


def partition_rank(part: dict[str, Any]) -> int:
    return PARTITION_RANK.get(str(part.get("state")), 1)  # a foreign state: probably in flight


def worker_rank(worker: dict[str, Any]) -> int:
    return WORKER_RANK.get(str(worker.get("state")), 1)


def pipeline_rank(pipe: dict[str, Any]) -> int:
    return PIPELINE_RANK.get(str(pipe.get("status")), 3)


def dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def shown_workers(snap: SnapshotDocument) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(all workers, those shown)."""
    workers = dicts(snap.get("gpu_workers"))
    return workers, shown(workers, max_worker_cards(), worker_rank)


def shown_pipelines(snap: SnapshotDocument) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    pipes = dicts(snap.get("pipelines"))
    return pipes, shown(pipes, max_pipelines(), pipeline_rank)


def shown_partitions(pipe: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    parts = dicts(pipe.get("partitions"))
    return parts, shown(parts, max_partition_cells(), partition_rank)


def hidden_counts(all_items: list[dict[str, Any]], kept: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """How many items are not shown, and of which `key` (state, status): for the "+ N more" line."""
    kept_ids = {id(x) for x in kept}
    by: dict[str, int] = {}
    for item in all_items:
        if id(item) not in kept_ids:
            value = str(item.get(key) or "unknown")
            by[value] = by.get(value, 0) + 1
    return {"count": len(all_items) - len(kept), "by": sorted(by.items())}


def api_url(snap: SnapshotDocument) -> str:
    """Where the whole of this engine's data is: /api/fleet for a fleet source, else /api/status."""
    return reverse("api-fleet") if isinstance(snap.get("source"), dict) else reverse("api-status")


def job_api_url(snap: SnapshotDocument, job_id: str) -> str:
    """Where one job's every partition is: this host's job API, or the fleet's for a source's job."""
    if isinstance(snap.get("source"), dict) or not job_id:
        return api_url(snap)
    try:
        return reverse("api-job", args=[job_id])
    except Exception:  # noqa: BLE001 - an id the job API's converter refuses: the whole status instead
        return api_url(snap)


def summarised_snapshot(snap: SnapshotDocument) -> dict[str, Any]:
    """The snapshot cut to what the panel shows, with `truncated` saying what was left out and where
    it all is. Every key is kept; only the long lists are cut."""
    out = dict(snap)
    workers, kept_workers = shown_workers(snap)
    pipes, kept_pipes = shown_pipelines(snap)
    parts_total = parts_kept = 0
    cut_pipes = []
    for pipe in kept_pipes:
        parts, kept_parts = shown_partitions(pipe)
        parts_total, parts_kept = parts_total + len(parts), parts_kept + len(kept_parts)
        cut_pipes.append({**pipe, "partitions": kept_parts} if len(kept_parts) < len(parts) else pipe)
    out["gpu_workers"], out["pipelines"] = kept_workers, cut_pipes
    if isinstance(snap.get("consistency"), list):
        out["consistency"] = snap["consistency"][:max_partition_cells()]
    out[TRUNCATED_KEY] = {"gpu_workers": len(workers), "gpu_workers_shown": len(kept_workers),
                          "pipelines": len(pipes), "pipelines_shown": len(kept_pipes),
                          "partitions_shown": parts_kept, "api": api_url(snap)}
    return out


def minimal_snapshot(snap: SnapshotDocument, reason: str) -> dict[str, Any]:
    """The last resort of a frame that would not fit even summarised: the small fixed parts only."""
    out = {k: snap[k] for k in SMALL_KEYS if k in snap}
    out[TRUNCATED_KEY] = {"reason": reason, "api": api_url(snap)}
    return out
