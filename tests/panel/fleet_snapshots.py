"""Fleet snapshots as the collector publishes them (a source object, consistency warnings), for the
panel tests: built from the cuzk fixture and from our own tracker, stored the way every engine is."""
from __future__ import annotations

import time
from typing import Any

from django.core.cache import cache

from gpu_engine import wire
from tests.panel.helpers import busy_tracker, cuzk_fixture

RACE_JOB = "ps-snap-1000-42-7"
UNKNOWN_KIND = "proof-of-replication-ni-porep-v2-experimental"


def source(state: str = "online", *, kind: str = "cuzk", transport: str = "http", error: str | None = None,
           last_ok: float | None = 0.4, poll_ms: float | None = 12.5) -> dict[str, Any]:
    return {"kind": kind, "transport": transport, "state": state, "error": error,
            "last_ok_secs_ago": last_ok, "poll_ms": poll_ms}


def cuzk_engine(name: str, seq: int = 1, *, state: str = "online", race: bool = False, **src: Any) -> dict[str, Any]:
    """The cuzk fixture as a fleet engine; `race` makes both workers idle while p5 and p6 are in gpu."""
    snap = cuzk_fixture()
    consistency = []
    if race:
        for w in snap["gpu_workers"]:
            w.update(state="idle", current_job=None, current_partition=None, busy_secs=0.0)
        consistency = [{"job_id": RACE_JOB, "partition": p, "worker_id": None, "problem": "no-worker",
                        "message": "partition in gpu, but no worker is proving it"} for p in (5, 6)]
    snap["pipelines"][1]["proof_kind"] = UNKNOWN_KIND
    snap.update(engine_id=name, seq=seq, published_at=time.time(), heartbeat_secs=1.5,
                source=source(state, kind="cuzk", **src), consistency=consistency)
    return snap


def our_engine(name: str, seq: int = 1, *, state: str = "online", **src: Any) -> dict[str, Any]:
    snap = busy_tracker().snapshot()
    snap.update(engine_id=name, seq=seq, published_at=time.time(), heartbeat_secs=1.5,
                source=source(state, kind="vastmanager", **src), consistency=[])
    return snap


def store(snap: dict[str, Any], heartbeat: float = 30.0) -> None:
    """Into the cache exactly as a publisher (local or the fleet collector) leaves it."""
    wire.store_snapshot(cache, snap, heartbeat)
    wire.register_engine(cache, snap["engine_id"], time.time())
