"""Snapshot publisher: tracker changes -> channel-layer group + cache (latest snapshot, liveness).

One thread per engine sleeps on `tracker.wait_for_change`, coalesces bursts to at most `max_rate`
snapshots a second (the latest state wins, since the snapshot is taken after the pause), stamps
`engine_id` and a rising `seq`, stores the snapshot in the cache with a TTL of two heartbeats
(that TTL *is* liveness) and sends it to `STATUS_GROUP`. It also republishes every heartbeat
without changes, so liveness and the durations of open phases stay fresh.

Delivery: with a loop attached (embedded mode, in-memory layer) the send runs on the server's loop
through `run_coroutine_threadsafe`; a plain thread cannot wake the in-memory layer's receivers
from a loop of its own. Without one (scale-out, Redis layer) the thread keeps one private loop for
its whole life, because the Redis layer binds its connections to the loop that made them.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import math
import threading
import time
from typing import TYPE_CHECKING, Any

from django.conf import settings

if TYPE_CHECKING:
    from gpu_engine.tracker import StatusTracker

log = logging.getLogger(__name__)

STATUS_GROUP = "vastmanager.status"
ENGINES_KEY = "vastmanager:engines"
MESSAGE_TYPE = "status.snapshot"
# Engines silent for this long are dropped from the known-engines registry.
FORGET_ENGINE_SECS = 3600.0
# How long a send may take before the publisher gives up on it (a stalled loop must not wedge it).
SEND_TIMEOUT_SECS = 5.0
# Upper bound of one sleep, so stop() is honoured promptly.
_POLL_SECS = 0.25


def snapshot_key(engine_id: str) -> str:
    """Cache key of an engine's latest snapshot (present while the engine is alive)."""
    return f"vastmanager:snapshot:{engine_id}"


def snapshot_ttl(cache, heartbeat_secs: float) -> float:
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


def _cache():
    from django.core.cache import cache

    return cache


def known_engines(cache=None) -> dict[str, float]:
    """Engine id -> wall-clock time of its last publish, for every engine seen recently."""
    value = (cache or _cache()).get(ENGINES_KEY)
    return dict(value) if isinstance(value, dict) else {}


def latest_snapshots(cache=None) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The latest snapshot of every live engine, and the last-seen time of those whose TTL expired."""
    cache = cache or _cache()
    engines = known_engines(cache)
    if not engines:
        return [], {}
    found = cache.get_many([snapshot_key(e) for e in engines])
    live: list[dict[str, Any]] = []
    gone: dict[str, float] = {}
    for engine_id in sorted(engines):
        snap = found.get(snapshot_key(engine_id))
        if isinstance(snap, dict):
            live.append(snap)
        else:
            gone[engine_id] = engines[engine_id]
    return live, gone


def message_snapshot(message: dict[str, Any]) -> dict[str, Any]:
    """The snapshot carried by a group message (sent pre-encoded as `snapshot_json`)."""
    if isinstance(message.get("snapshot_json"), str):
        return json.loads(message["snapshot_json"])
    if isinstance(message.get("snapshot"), dict):
        return message["snapshot"]
    raise ValueError("group message carries no snapshot")


class SnapshotPublisher:
    """Publishes one tracker's snapshots; see the module docstring for the delivery modes."""

    def __init__(
        self,
        tracker: StatusTracker,
        engine_id: str,
        *,
        max_rate: float = 10.0,
        heartbeat_secs: float | None = None,
        channel_layer=None,
        cache=None,
    ) -> None:
        if max_rate <= 0:
            raise ValueError(f"max_rate must be positive, got {max_rate}")
        heartbeat = settings.HEARTBEAT_SECS if heartbeat_secs is None else heartbeat_secs
        if heartbeat <= 0:
            raise ValueError(f"heartbeat_secs must be positive, got {heartbeat}")
        self.tracker = tracker
        self.engine_id = validate_engine_id(engine_id)
        self.min_interval = 1.0 / max_rate
        self.heartbeat_secs = float(heartbeat)
        self._layer = channel_layer
        self._cache = cache
        self._loop: asyncio.AbstractEventLoop | None = None
        self._own_loop: asyncio.AbstractEventLoop | None = None
        self._inflight: concurrent.futures.Future | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Seeded from the wall clock in ms: a restarted engine starts above its previous run's seqs
        # (at 10/s a run advances 10 per second, the clock 1000), so readers keyed by (engine, seq)
        # never confuse the two.
        # A restart within milliseconds is covered by also starting above the cached snapshot's seq.
        self._seq = int(time.time() * 1000)
        self._seeded = False
        self._registered_at = 0.0
        self.published = 0
        self.send_errors = 0

    # -- wiring ---------------------------------------------------------------------------------
    def attach_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Deliver through `loop` (the server's), as the in-memory layer requires."""
        self._loop = loop

    @property
    def channel_layer(self):
        if self._layer is None:
            from channels.layers import get_channel_layer

            self._layer = get_channel_layer()
        return self._layer

    @property
    def cache(self):
        return self._cache if self._cache is not None else _cache()

    @property
    def seq(self) -> int:
        return self._seq

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("publisher already started")
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"publisher-{self.engine_id}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        try:
            seen = self.tracker.seq
            last = time.monotonic()
            self._publish_safely()
            while not self._stop.is_set():
                deadline = last + self.heartbeat_secs
                while not self._stop.is_set():
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    current = self.tracker.wait_for_change(seen, min(remaining, _POLL_SECS))
                    if current != seen:
                        break
                if self._stop.is_set():
                    break
                # Coalesce: never faster than max_rate; the pause lets a burst settle into one frame.
                pause = last + self.min_interval - time.monotonic()
                if pause > 0 and self._stop.wait(pause):
                    break
                seen = self.tracker.seq  # read before the snapshot: a later change triggers the next one
                last = time.monotonic()  # the period runs from start to start, so a slow send costs no rate
                self._publish_safely()
        finally:
            self._await_inflight()
            if self._own_loop is not None:
                self._own_loop.close()
                self._own_loop = None

    def _publish_safely(self) -> None:
        try:
            self.publish_now()
        except Exception:  # the panel going dark must never stop the publisher
            self.send_errors += 1
            log.exception("publishing snapshot of engine %s failed", self.engine_id)

    # -- one publish ----------------------------------------------------------------------------
    def publish_now(self) -> dict[str, Any]:
        """Take, stamp, store and send one snapshot; returns it. Called by the thread (or a test)."""
        cache = self.cache
        if not self._seeded:
            previous = cache.get(snapshot_key(self.engine_id))
            if isinstance(previous, dict) and isinstance(previous.get("seq"), int):
                self._seq = max(self._seq, previous["seq"])
            self._seeded = True
        snap = self.tracker.snapshot()
        self._seq += 1
        now = time.time()
        snap["engine_id"] = self.engine_id
        snap["seq"] = self._seq
        snap["published_at"] = now
        snap["heartbeat_secs"] = self.heartbeat_secs
        cache.set(snapshot_key(self.engine_id), snap, timeout=snapshot_ttl(cache, self.heartbeat_secs))
        if now - self._registered_at >= self.heartbeat_secs:
            self._register(cache, now)
        # The snapshot travels pre-encoded: the in-memory layer deep-copies every message once per
        # receiving channel, and copying a str is free where copying the dict tree is not.
        self._send({"type": MESSAGE_TYPE, "engine_id": self.engine_id, "seq": self._seq,
                    "snapshot_json": json.dumps(snap, separators=(",", ":"))})
        self.published += 1
        return snap

    def _register(self, cache, now: float) -> None:
        # Read-modify-write without a lock: a lost update is repaired by that engine's next heartbeat.
        engines = {e: t for e, t in known_engines(cache).items() if now - t < FORGET_ENGINE_SECS}
        engines[self.engine_id] = now
        cache.set(ENGINES_KEY, engines, timeout=None)
        self._registered_at = now

    def _send(self, message: dict[str, Any]) -> None:
        layer = self.channel_layer
        if layer is None:
            return
        loop = self._loop
        if loop is not None:
            if loop.is_closed():
                raise RuntimeError("the attached event loop is closed")
            # At most one send in flight: the thread does not wait for each delivery (that would tie
            # the publish rate to the server loop's load), but never piles sends onto a busy loop.
            self._await_inflight()
            future = asyncio.run_coroutine_threadsafe(layer.group_send(STATUS_GROUP, message), loop)
            future.add_done_callback(self._send_done)
            self._inflight = future
            return
        if self._own_loop is None:
            self._own_loop = asyncio.new_event_loop()
        self._own_loop.run_until_complete(
            asyncio.wait_for(layer.group_send(STATUS_GROUP, message), SEND_TIMEOUT_SECS)
        )

    def _await_inflight(self) -> None:
        future, self._inflight = self._inflight, None
        if future is None or future.done():
            return
        loop = self._loop
        if loop is not None and (loop.is_closed() or not loop.is_running()):
            future.cancel()  # the server is shutting down: nothing will run it
            return
        try:
            future.result(SEND_TIMEOUT_SECS)
        except Exception:  # counted and logged by _send_done
            future.cancel()

    def _send_done(self, future) -> None:
        if future.cancelled():
            if not self._stop.is_set():  # a send dropped while shutting down is expected
                self.send_errors += 1
                log.warning("snapshot send of engine %s timed out on the server loop", self.engine_id)
        elif future.exception() is not None:
            self.send_errors += 1
            log.error("snapshot send of engine %s failed: %r", self.engine_id, future.exception())
