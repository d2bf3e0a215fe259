"""The wire contract between an engine and every panel: where snapshots travel and how they look there.

Producers (this process's `SnapshotPublisher`, a fleet collector for remote engines) and readers
(statuspanel's WebSocket consumer and views) meet here and nowhere else:

* the channel-layer group `STATUS_GROUP`, carrying messages of type `MESSAGE_TYPE` built by
  `snapshot_message` (the snapshot pre-encoded as `snapshot_json`);
* the cache: each engine's latest snapshot under `snapshot_key(engine_id)`, with a TTL of two
  heartbeats (that TTL is liveness), and the registry of recently seen engines under `ENGINES_KEY`.

The snapshot itself is documented in docs/SNAPSHOT.md.
"""
from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.core.cache.backends.base import BaseCache

    from gpu_engine.schema import Snapshot

STATUS_GROUP = "vastmanager.status"
ENGINES_KEY = "vastmanager:engines"
MESSAGE_TYPE = "status.snapshot"
# Engines silent for this long are dropped from the known-engines registry.
FORGET_ENGINE_SECS = 3600.0


def snapshot_key(engine_id: str) -> str:
    """Cache key of an engine's latest snapshot (present while the engine is alive)."""
    return f"vastmanager:snapshot:{engine_id}"


def snapshot_ttl(cache: BaseCache, heartbeat_secs: float) -> float:
    """Cache TTL of a snapshot (liveness): two heartbeats, rounded up to whole seconds where the
    backend keeps whole seconds only (Django's Redis and memcached backends truncate a timeout to
    an int, and a TTL truncated to 0 deletes the key: a heartbeat under 0.5 s never looked live)."""
    ttl = 2 * heartbeat_secs
    return math.ceil(ttl) if isinstance(cache.get_backend_timeout(ttl), int) else ttl


def validate_engine_id(engine_id: str) -> str:
    """Engine ids end up in cache keys and HTML attributes: printable, no whitespace, bounded."""
    if not isinstance(engine_id, str) or not engine_id:
        raise ValueError("engine_id must be a non-empty string")
    if len(engine_id) > 128 or any(c.isspace() or not c.isprintable() for c in engine_id):
        raise ValueError(f"engine_id {engine_id!r} must be at most 128 printable characters without spaces")
    return engine_id


def default_cache() -> BaseCache:
    from django.core.cache import cache

    return cache


def known_engines(cache: BaseCache | None = None) -> dict[str, float]:
    """Engine id -> wall-clock time of its last publish, for every engine seen recently."""
    value = (cache or default_cache()).get(ENGINES_KEY)
    return dict(value) if isinstance(value, dict) else {}


def latest_snapshots(cache: BaseCache | None = None) -> tuple[list[Snapshot], dict[str, float]]:
    """The latest snapshot of every live engine, and the last-seen time of those whose TTL expired."""
    cache = cache or default_cache()
    engines = known_engines(cache)
    if not engines:
        return [], {}
    found = cache.get_many([snapshot_key(e) for e in engines])
    live: list[Snapshot] = []
    gone: dict[str, float] = {}
    for engine_id in sorted(engines):
        snap: Snapshot | None = found.get(snapshot_key(engine_id))  # only store_snapshot writes these
        if snap is not None:
            live.append(snap)
        else:
            gone[engine_id] = engines[engine_id]
    return live, gone


def message_snapshot(message: dict[str, Any]) -> Snapshot:
    """The snapshot carried by a group message (sent pre-encoded as `snapshot_json`); only
    `snapshot_message` builds these, so what it carries is a `Snapshot`."""
    snap: Snapshot
    if isinstance(message.get("snapshot_json"), str):
        snap = json.loads(message["snapshot_json"])
    elif isinstance(message.get("snapshot"), dict):
        snap = message["snapshot"]
    else:
        raise ValueError("group message carries no snapshot")
    return snap


def snapshot_message(engine_id: str, seq: int, snap: Snapshot) -> dict[str, Any]:
    """The group message for one snapshot. It travels pre-encoded: the in-memory layer deep-copies
    every message once per receiving channel, and copying a str is free where a dict tree is not."""
    return {"type": MESSAGE_TYPE, "engine_id": engine_id, "seq": seq,
            "snapshot_json": json.dumps(snap, separators=(",", ":"))}


def store_snapshot(cache: BaseCache, snap: Snapshot, heartbeat_secs: float) -> None:
    """Keep `snap` as its engine's latest snapshot, live for two heartbeats."""
    engine_id = snap["engine_id"]
    if engine_id is None:
        raise ValueError("a snapshot is stored under its engine id: stamp engine_id first")
    cache.set(snapshot_key(engine_id), snap, timeout=snapshot_ttl(cache, heartbeat_secs))


def register_engine(cache: BaseCache, engine_id: str, now: float) -> None:
    """Mark `engine_id` seen at `now` in the registry (engines silent for an hour are forgotten).

    Read-modify-write without a lock: a lost update is repaired by that engine's next heartbeat."""
    engines = {e: t for e, t in known_engines(cache).items() if now - t < FORGET_ENGINE_SECS}
    engines[engine_id] = now
    cache.set(ENGINES_KEY, engines, timeout=None)


def forget_engine(cache: BaseCache, engine_id: str) -> None:
    """Drop an engine's snapshot and its registry entry at once (a fleet source that was removed)."""
    cache.delete(snapshot_key(engine_id))
    engines = known_engines(cache)
    if engines.pop(engine_id, None) is not None:
        cache.set(ENGINES_KEY, engines, timeout=None)
