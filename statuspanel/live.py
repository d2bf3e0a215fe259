"""The live engines as every view sees them: the cache's snapshots plus this process's engine."""
from __future__ import annotations

from gpu_engine import runtime, wire
from gpu_engine.schema import Snapshot
from statuspanel.render.engine import engine_id_of


def current_snapshots() -> tuple[list[Snapshot], list[tuple[str, float]]]:
    """Live snapshots from the cache (every engine), plus this process's engine if it has not
    published yet; and the engines whose heartbeat expired, with when they were last seen."""
    live, gone = wire.latest_snapshots()
    seen = {engine_id_of(s) for s in live}
    local = runtime.local_engine_id()
    if local is not None and local not in seen:
        snap = runtime.local_snapshot()
        if snap is not None:
            live.append(snap)
            gone.pop(local, None)
    live.sort(key=engine_id_of)
    return live, sorted(gone.items())
