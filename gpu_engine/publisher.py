"""Snapshot publisher: tracker changes -> channel-layer group + cache (latest snapshot, liveness).

One thread per engine sleeps on `tracker.wait_for_change`, coalesces bursts to at most `max_rate`
snapshots a second (the latest state wins, since the snapshot is taken after the pause), stamps
`engine_id` and a rising `seq`, stores the snapshot in the cache and sends it to the status group
(the wire contract: wire.py). It also republishes every heartbeat
without changes, so liveness and the durations of open phases stay fresh.

Delivery: with a loop attached (embedded mode, in-memory layer) the send runs on the server's loop
through `run_coroutine_threadsafe`; a plain thread cannot wake the in-memory layer's receivers
from a loop of its own. Without one (scale-out, Redis layer) the thread keeps one private loop for
its whole life, because the Redis layer binds its connections to the loop that made them.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from django.conf import settings

from gpu_engine.wire import (STATUS_GROUP, default_cache, register_engine, snapshot_key, snapshot_message,
                             store_snapshot, validate_engine_id)

if TYPE_CHECKING:
    from channels.layers import BaseChannelLayer
    from django.core.cache.backends.base import BaseCache

    from gpu_engine.schema import Snapshot
    from gpu_engine.tracker import StatusTracker

log = logging.getLogger(__name__)

# How long a send may take before the publisher gives up on it (a stalled loop must not wedge it).
SEND_TIMEOUT_SECS = 5.0
# Upper bound of one sleep, so stop() is honoured promptly.
_POLL_SECS = 0.25


class SnapshotPublisher:
    """Publishes one tracker's snapshots; see the module docstring for the delivery modes."""

    def __init__(
        self,
        tracker: StatusTracker,
        engine_id: str,
        *,
        max_rate: float = 10.0,
        heartbeat_secs: float | None = None,
        channel_layer: BaseChannelLayer | None = None,
        cache: BaseCache | None = None,
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
        self._inflight: concurrent.futures.Future[None] | None = None
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
    def channel_layer(self) -> BaseChannelLayer | None:
        if self._layer is None:
            from channels.layers import get_channel_layer

            self._layer = get_channel_layer()
        return self._layer

    @property
    def cache(self) -> BaseCache:
        return self._cache if self._cache is not None else default_cache()

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
    def publish_now(self) -> Snapshot:
        """Take, stamp, store and send one snapshot; returns it. Called by the thread (or a test)."""
        cache = self.cache
        if not self._seeded:
            previous: Snapshot | None = cache.get(snapshot_key(self.engine_id))  # only store_snapshot writes it
            if previous is not None:
                self._seq = max(self._seq, previous["seq"])
            self._seeded = True
        snap = self.tracker.snapshot()
        self._seq += 1
        now = time.time()
        snap["engine_id"] = self.engine_id
        snap["seq"] = self._seq
        snap["published_at"] = now
        snap["heartbeat_secs"] = self.heartbeat_secs
        store_snapshot(cache, snap, self.heartbeat_secs)
        if now - self._registered_at >= self.heartbeat_secs:
            register_engine(cache, self.engine_id, now)
            self._registered_at = now
        self._send(snapshot_message(self.engine_id, self._seq, snap))
        self.published += 1
        return snap

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

    def _send_done(self, future: concurrent.futures.Future[None]) -> None:
        if future.cancelled():
            if not self._stop.is_set():  # a send dropped while shutting down is expected
                self.send_errors += 1
                log.warning("snapshot send of engine %s timed out on the server loop", self.engine_id)
        elif future.exception() is not None:
            self.send_errors += 1
            log.error("snapshot send of engine %s failed: %r", self.engine_id, future.exception())
