"""Snapshot publisher: tracker changes -> channel-layer group + cache (latest snapshot, liveness).

One thread per engine sleeps on `tracker.wait_for_change`, coalesces bursts to at most `max_rate`
snapshots a second (the latest state wins, since the snapshot is taken after the pause), stamps
`engine_id` and a rising `seq`, stores the snapshot in the cache and sends it to the status group
(the wire contract: wire.py). It also republishes every heartbeat
without changes, so liveness and the durations of open phases stay fresh.

Delivery (gpu_engine/delivery.py) under `PUBLISHER_POLICY`: a busy send is waited for (at most
delivery.SEND_TIMEOUT_SECS: this is a thread of its own, and every snapshot goes out in order), and a send
cancelled because it timed out counts as an error.
"""
from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING

from django.conf import settings

from gpu_engine.delivery import Busy, Delivery, SendPolicy
from gpu_engine.wire import snapshot_key, snapshot_message, validate_engine_id

if TYPE_CHECKING:
    from channels.layers import BaseChannelLayer
    from django.core.cache.backends.base import BaseCache

    from gpu_engine.schema import Snapshot
    from gpu_engine.tracker import StatusTracker

# A thread of its own may block on a busy send; a cancel there is its own timeout, so an error.
PUBLISHER_POLICY = SendPolicy(busy=Busy.WAIT, cancelled_is_error=True)
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
        self.delivery = Delivery(PUBLISHER_POLICY, channel_layer=channel_layer, cache=cache, what="snapshot")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Seeded from the wall clock in ms: a restarted engine starts above its previous run's seqs
        # (at 10/s a run advances 10 per second, the clock 1000), so readers keyed by (engine, seq)
        # never confuse the two.
        # A restart within milliseconds is covered by also starting above the cached snapshot's seq.
        self._seq = int(time.time() * 1000)
        self._seeded = False
        self.published = 0

    # -- wiring ---------------------------------------------------------------------------------
    def attach_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Deliver through `loop` (the server's), as the in-memory layer requires."""
        self.delivery.attach_loop(loop)

    @property
    def channel_layer(self):
        return self.delivery.channel_layer

    @property
    def cache(self):
        return self.delivery.cache

    @property
    def send_errors(self) -> int:
        return self.delivery.errors

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
        self.delivery.stopping()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        try:
            seen = self.tracker.seq
            last = time.monotonic()
            self.publish_safely()
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
                self.publish_safely()
        finally:
            self.delivery.close()

    def publish_safely(self) -> None:
        """`publish_now` for the thread: a failure is counted and logged, never raised."""
        try:
            self.publish_now()
        except Exception:  # noqa: BLE001 - the panel going dark must never stop the publisher; logged by failed()
            self.delivery.failed(self.engine_id)

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
        self.delivery.store(snap)
        self.delivery.send(snapshot_message(self.engine_id, self._seq, snap))
        self.published += 1
        return snap
