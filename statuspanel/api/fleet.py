"""`GET /api/fleet`: every engine's latest snapshot (local ones and fleet sources alike), each with its
`source` and `consistency`, plus a summary. Same auth as /api/status (the status token reads it)."""
from __future__ import annotations

import time
from collections import Counter
from typing import Any

from django.http import HttpRequest, JsonResponse

from gpu_engine.schema import SnapshotDocument
from gpu_engine.tracker.consistency import check_consistency
from gpu_engine.vocabulary import PHASES, WORKER_STATES
from statuspanel.api.responses import methods
from statuspanel.auth import status_auth_required
from statuspanel.fleet.vocabulary import SOURCE_DOWN_STATES, SOURCE_ONLINE, SOURCE_STALE, SOURCE_STATES
from statuspanel.live import current_snapshots
from statuspanel.render.numbers import num


def local_source(snap: SnapshotDocument, now: float) -> dict[str, Any]:
    """The `source` object of an engine that publishes itself (no collector in between)."""
    published, heartbeat = num(snap.get("published_at")), num(snap.get("heartbeat_secs"))
    age = None if published is None else round(max(0.0, now - published), 3)
    stale = age is not None and heartbeat is not None and age > 2 * heartbeat
    return {"kind": "vastmanager", "transport": "local", "state": SOURCE_STALE if stale else SOURCE_ONLINE,
            "error": None, "last_ok_secs_ago": age, "poll_ms": None}


def fleet_entry(snap: SnapshotDocument, now: float) -> dict[str, Any]:
    entry = dict(snap)
    if not isinstance(entry.get("source"), dict):
        entry["source"] = local_source(snap, now)
    if not isinstance(entry.get("consistency"), list):
        entry["consistency"] = check_consistency(snap)
    return entry


def fleet_summary(engines: list[dict[str, Any]]) -> dict[str, Any]:
    """Engines online / total, sources failing, workers by state, partitions by phase, warnings."""
    states: Counter[str] = Counter({s: 0 for s in SOURCE_STATES})
    workers: Counter[str] = Counter({s: 0 for s in WORKER_STATES})
    phases: Counter[str] = Counter({p: 0 for p in PHASES})
    warnings = 0
    for e in engines:
        state = e["source"].get("state")
        states[state] += 1
        warnings += len(e["consistency"])
        for w in e.get("gpu_workers") or ():
            if isinstance(w, dict):
                workers[str(w.get("state"))] += 1
        for pipe in e.get("pipelines") or ():
            for part in (pipe.get("partitions") or ()) if isinstance(pipe, dict) else ():
                if isinstance(part, dict):
                    phases[str(part.get("state"))] += 1
    return {
        "engines_total": len(engines),
        "engines_online": states[SOURCE_ONLINE],
        "sources_failing": sum(n for s, n in states.items() if s in SOURCE_DOWN_STATES),
        "by_state": dict(states),
        "workers": dict(workers),
        "partitions": dict(phases),
        "consistency_warnings": warnings,
    }


@status_auth_required
@methods("GET")
def api_fleet(request: HttpRequest) -> JsonResponse:
    now = time.time()
    live, gone = current_snapshots()
    engines = [fleet_entry(s, now) for s in live]
    return JsonResponse({"engines": engines, "gone": [{"engine_id": e, "last_seen": t} for e, t in gone],
                         "summary": fleet_summary(engines)})
