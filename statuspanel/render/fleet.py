"""What the panel shows of a fleet: each engine's source state, tracker-consistency warnings, cuzk's
own data, and the tallies the fleet summary adds up.

Every engine's partial carries its tallies (`data-tally` on its body, JSON): the page sums them
server-side for the first paint and panel.js sums the same numbers as frames arrive, so the summary
follows the one WebSocket stream without a second source of data. All reading is defensive: a fleet
snapshot may come from a foreign engine and miss any optional key.
"""
from __future__ import annotations

import json
import threading
from collections import deque
from typing import Any

from gpu_engine.schema import SnapshotDocument
from gpu_engine.vocabulary import CONSISTENCY_PROBLEMS, ERROR, IDLE, PHASES, PROVING
from statuspanel.fleet.vocabulary import (
    SOURCE_DOWN_STATES,
    SOURCE_ONLINE,
    SOURCE_STALE,
    SOURCE_STATES,
    SOURCE_UNREACHABLE,
)
from statuspanel.render.numbers import num

CONSISTENCY_SHOWN = 8           # warnings listed per engine; the rest are counted
OTHER_PHASE = "other"           # partitions in a state outside PHASES (a foreign engine's)
# More engines than this and the page starts with every engine collapsed to its summary row.
COLLAPSE_OVER = 6


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_fleet_source(snap: SnapshotDocument) -> bool:
    """A snapshot the fleet collector brought in (its history lives on its own host, not here)."""
    return isinstance(snap.get("source"), dict)


# -- per engine -----------------------------------------------------------------------------------
def source_context(snap: SnapshotDocument) -> dict[str, Any] | None:
    """How the collector last reached this engine; None for an engine that is not a fleet source."""
    src = snap.get("source")
    if not isinstance(src, dict):
        return None
    state = str(src.get("state") or SOURCE_UNREACHABLE)
    kind = str(src.get("kind") or "")
    return {
        "kind": kind,
        "kind_label": kind,  # source kinds are shown by their names (`cuzk`, `vastmanager`)
        "transport": str(src.get("transport") or ""),
        "state": state,
        "state_class": state if state in SOURCE_STATES else "unknown",
        "error": str(src.get("error") or ""),
        "last_ok_secs_ago": num(src.get("last_ok_secs_ago")),
        "poll_ms": num(src.get("poll_ms")),
        "target": str(src.get("target") or ""),
        "failures": _count(src.get("failures")),
        "online": state == SOURCE_ONLINE,
        "failing": state in SOURCE_DOWN_STATES,
    }


def consistency_context(snap: SnapshotDocument) -> dict[str, Any]:
    """The tracker-consistency warnings (a partition in `gpu` that no worker proves, or a worker
    proving a partition that is not in `gpu`): the first few listed, all counted."""
    raw = snap.get("consistency")
    items = []
    for c in raw if isinstance(raw, list) else []:
        if isinstance(c, dict):
            worker = c.get("worker_id")
            items.append({"job_id": str(c.get("job_id") or ""), "partition": _count(c.get("partition")),
                          "worker_id": worker if isinstance(worker, (int, str)) else None,
                          "problem": str(c.get("problem") or ""),
                          "message": str(c.get("message") or CONSISTENCY_PROBLEMS.get(str(c.get("problem")), ""))})
    return {"count": len(items), "items": items[:CONSISTENCY_SHOWN], "more": max(0, len(items) - CONSISTENCY_SHOWN),
            "cells": {(c["job_id"], c["partition"]) for c in items}}


def cuzk_context(snap: SnapshotDocument) -> dict[str, Any] | None:
    """What only a cuzk daemon reports: SRS/PCE allocations (bytes, evictability) and buffer counters."""
    allocs = snap.get("allocations")
    buffers = snap.get("buffers")
    rows = []
    if isinstance(allocs, dict):
        for pool in sorted(allocs):
            for a in allocs[pool] if isinstance(allocs[pool], list) else []:
                if isinstance(a, dict):
                    evictable = a.get("evictable")
                    rows.append({"pool": str(pool).upper(), "circuit_id": str(a.get("circuit_id") or ""),
                                 "bytes": _count(a.get("bytes")),
                                 "last_used_secs_ago": num(a.get("last_used_secs_ago")),
                                 "evictable": evictable if isinstance(evictable, bool) else None})
    counters = [(str(k), v) for k, v in buffers.items() if _count(v) is not None] if isinstance(buffers, dict) else []
    if not rows and not counters:
        return None
    return {
        "allocations": rows,
        "total_bytes": sum(r["bytes"] or 0 for r in rows),
        "evictable_bytes": sum(r["bytes"] or 0 for r in rows if r["evictable"]),
        "buffers": counters,
    }


def _worker_tally(workers: list[tuple[str, Any]]) -> tuple[dict[str, int], dict[str, int]]:
    """Workers by state, and GPUs by state, from every worker's (state, gpu_ordinal): a GPU is in
    `error` if any of its workers is, else `proving` if any proves, else `idle`."""
    by_state = {PROVING: 0, IDLE: 0, ERROR: 0}
    gpu_states: dict[Any, set[str]] = {}
    for worker_state, gpu_ordinal in workers:
        state = worker_state if worker_state in by_state else IDLE
        by_state[state] += 1
        ordinal = gpu_ordinal if isinstance(gpu_ordinal, (int, str)) else None
        gpu_states.setdefault(ordinal, set()).add(state)
    gpus = {PROVING: 0, IDLE: 0, ERROR: 0}
    for states in gpu_states.values():
        gpus[ERROR if ERROR in states else PROVING if PROVING in states else IDLE] += 1
    return by_state, gpus


def engine_tally(ctx: dict[str, Any]) -> dict[str, Any]:
    """The numbers this engine adds to the fleet summary (from its engine context)."""
    src = ctx["source"]
    state = src["state"] if src else (SOURCE_ONLINE if ctx["online"] else SOURCE_STALE)
    workers, gpus = _worker_tally(ctx["worker_states"])
    phases = {p: 0 for p in (*PHASES, OTHER_PHASE)}
    for phase, n in ctx["phase_counts"].items():
        phases[phase if phase in phases else OTHER_PHASE] += n
    return {"id": ctx["engine_id"], "state": state, "failing": bool(src and src["failing"]),
            "workers": workers, "gpus": gpus, "phases": phases, "ppm": ctx["proofs_per_min"],
            "warnings": ctx["consistency"]["count"]}


def tally_json(tally: dict[str, Any]) -> str:
    """The tally as the page reads it: zero counts left out (the page counts a missing one as 0) and
    the rate to the tenth it shows, so that the attribute changes, and travels in a patch frame, only
    when a figure the page shows does."""
    compact: dict[str, Any] = {k: ({n: c for n, c in v.items() if c} if k in ("workers", "gpus", "phases") else v)
                               for k, v in tally.items()}
    ppm = compact.get("ppm")
    if isinstance(ppm, float):
        compact["ppm"] = round(ppm, 1)
    return json.dumps(compact, separators=(",", ":"))


# -- proofs per minute ----------------------------------------------------------------------------
class RateMeter:
    """Completed proofs per minute per engine, from `counters.total_completed` seen over time.

    Fed once per rendered snapshot (renders are cached per engine and seq); a falling counter (an
    engine restarted) starts the engine's window again."""

    WINDOW_SECS = 60.0
    MIN_SPAN_SECS = 5.0

    def __init__(self) -> None:
        self._samples: dict[str, deque[tuple[float, int]]] = {}
        self._lock = threading.Lock()

    def observe(self, engine_id: str, at: float, completed: int) -> float | None:
        with self._lock:
            samples = self._samples.setdefault(engine_id, deque(maxlen=512))
            if samples and (completed < samples[-1][1] or at < samples[-1][0]):
                samples.clear()
            if not samples or at > samples[-1][0]:
                samples.append((at, completed))
            while len(samples) > 2 and samples[1][0] <= at - self.WINDOW_SECS:
                samples.popleft()
            first_at, first = samples[0]
            span = at - first_at
            # No rate until one can be told: a young window with nothing completed in it says
            # nothing yet (a "0.0" would read as a stalled engine that has just been started).
            if span < self.MIN_SPAN_SECS or (completed == first and span < self.WINDOW_SECS):
                return None
            return 60.0 * (completed - first) / span

    def clear(self) -> None:
        with self._lock:
            self._samples.clear()


rate_meter = RateMeter()


# -- the fleet ------------------------------------------------------------------------------------
def fleet_summary(tallies: list[dict[str, Any]], offline: int = 0) -> dict[str, Any]:
    """The summary rows on top of the panel. Workers, GPUs and partitions count only engines whose
    data is current (online): a dropped host's last snapshot is history, not work in progress."""
    total: dict[str, Any] = {"engines": len(tallies) + offline, "online": 0, "failing": [], "warnings": 0,
             "workers": {PROVING: 0, IDLE: 0, ERROR: 0}, "gpus": {PROVING: 0, IDLE: 0, ERROR: 0},
             "phases": {p: 0 for p in (*PHASES, OTHER_PHASE)}, "ppm": None}
    for t in tallies:
        if t["failing"]:
            total["failing"].append({"id": t["id"], "state": t["state"]})
        if t["state"] != SOURCE_ONLINE:
            continue
        total["online"] += 1
        total["warnings"] += t["warnings"]
        for group in ("workers", "gpus", "phases"):
            for key, n in t[group].items():
                total[group][key] = total[group].get(key, 0) + n
        if t["ppm"] is not None:
            total["ppm"] = (total["ppm"] or 0.0) + t["ppm"]
    total["phase_list"] = [(p, total["phases"][p]) for p in (*PHASES, OTHER_PHASE)]
    from statuspanel.render.cost import fleet_cost_rows  # the report reads the database; cached 30 s

    total["cost"] = fleet_cost_rows()
    return total
