"""One way onto the wire: how a producer's snapshots reach the cache and the channel group.

Both producers, this process's `SnapshotPublisher` (a plain thread) and the fleet collector (an
asyncio loop of its own), deliver through a `Delivery`: it stores each snapshot as its engine's
latest (liveness), registers the engine once a heartbeat, and sends the group message. Where the
send runs:

* with a server loop attached (embedded mode, in-memory layer) on that loop through
  `run_coroutine_threadsafe`: a plain thread or another loop cannot wake the in-memory layer's
  receivers from a loop of its own;
* else, called from a running loop (the collector), as a task on that loop;
* else (a plain thread, scale-out with the Redis layer) on one private loop kept for the thread's
  whole life, because the Redis layer binds its connections to the loop that made them.

What differs between the callers is the `SendPolicy`, chosen where each one builds its Delivery:
whether a producer waits for a busy send or drops its newer message (the cache holds the latest,
so the next heartbeat delivers it), and whether a cancelled send counts as an error. A send
cancelled while the delivery closes never does: that is shutdown, not failure.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import enum
import logging
import time
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpu_engine.schema import Snapshot

from gpu_engine.wire import STATUS_GROUP, default_cache, register_engine, store_snapshot

log = logging.getLogger(__name__)

# How long one send may take before it is given up (a stalled loop must not wedge its producer).
SEND_TIMEOUT_SECS = 5.0


class Busy(enum.Enum):
    """What a send does while the previous send of the same engine is still in flight."""

    WAIT = "wait"  # block (at most SEND_TIMEOUT_SECS) until it is delivered: every message goes out in order
    DROP_STALE = "drop-stale"  # skip this message: the cache holds the latest, the next publish sends it


@dataclass(frozen=True)
class SendPolicy:
    busy: Busy
    # A cancelled send outside shutdown: an error (it was cancelled because it timed out) or not
    # (cancelled by the loop it ran on, whose owner is going away).
    cancelled_is_error: bool


class Delivery:
    """Cache, heartbeat registration and group sends for one producer (one engine or many)."""

    def __init__(self, policy: SendPolicy, *, channel_layer: Any = None, cache: Any = None,
                 what: str = "snapshot", group: str = STATUS_GROUP) -> None:
        self.policy = policy
        self.what = what  # how the log names this producer's sends
        self.group = group  # the channel-layer group its messages go to
        self._layer = channel_layer
        self._cache = cache
        self._server_loop: asyncio.AbstractEventLoop | None = None
        self._private_loop: asyncio.AbstractEventLoop | None = None
        self._inflight: dict[str, concurrent.futures.Future[None] | asyncio.Future[None]] = {}
        self._registered: dict[str, float] = {}
        self._closing = False
        self.errors = 0

    # -- wiring ---------------------------------------------------------------------------------
    def attach_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Send through `loop` (the server's), as the in-memory layer requires."""
        self._server_loop = loop

    @property
    def channel_layer(self) -> Any:
        if self._layer is None:
            from channels.layers import get_channel_layer

            self._layer = get_channel_layer()
        return self._layer

    @property
    def cache(self) -> Any:
        return self._cache if self._cache is not None else default_cache()

    # -- delivering -----------------------------------------------------------------------------
    def store(self, snap: Snapshot) -> None:
        """Keep `snap` as its engine's latest (live for two heartbeats); register the engine once a heartbeat."""
        cache, engine_id, now = self.cache, snap["engine_id"], time.time()
        if engine_id is None:
            raise ValueError("a snapshot is stored under its engine id: stamp engine_id first")
        store_snapshot(cache, snap, snap["heartbeat_secs"])
        if now - self._registered.get(engine_id, 0.0) >= snap["heartbeat_secs"]:
            register_engine(cache, engine_id, now)
            self._registered[engine_id] = now

    def send(self, message: dict[str, Any]) -> None:
        """Send one group message (see the module docstring for where it runs). Raises when the
        attached loop is closed; a send that fails later is counted in `errors` and logged."""
        layer = self.channel_layer
        if layer is None:
            return
        engine_id = message.get("engine_id", message["type"])  # what "one send in flight" is counted by
        target = self._server_loop
        if target is not None and target.is_closed():
            raise RuntimeError("the attached event loop is closed")
        running = _running_loop()
        if target is None and running is None:
            if self._private_loop is None:
                self._private_loop = asyncio.new_event_loop()
            self._private_loop.run_until_complete(
                asyncio.wait_for(layer.group_send(self.group, message), SEND_TIMEOUT_SECS))
            return
        if not self._make_room(engine_id, blocking_allowed=running is None):
            return
        future: concurrent.futures.Future[None] | asyncio.Future[None]
        if target is not None:
            future = asyncio.run_coroutine_threadsafe(layer.group_send(self.group, message), target)
        else:
            future = asyncio.ensure_future(asyncio.wait_for(layer.group_send(self.group, message),
                                                            SEND_TIMEOUT_SECS))
        future.add_done_callback(partial(self._sent, engine_id))
        self._inflight[engine_id] = future

    def busy(self, engine_id: str) -> bool:
        """Whether a send of `engine_id` is still in flight."""
        future = self._inflight.get(engine_id)
        return future is not None and not future.done()

    def failed(self, engine_id: str) -> None:
        """Count and log a publish that failed before or while it was sent (called by the producer)."""
        self.errors += 1
        log.exception("publishing the %s of %s failed", self.what, engine_id)

    def stopping(self) -> None:
        """The producer is shutting down: sends cancelled from now on are not errors."""
        self._closing = True

    def close(self) -> None:
        """After the last send: under `Busy.WAIT` the sends in flight are waited for (they carry
        the last state), and the private loop is closed."""
        self._closing = True
        if self.policy.busy is Busy.WAIT:
            for engine_id in list(self._inflight):
                self._wait_for(engine_id)
        if self._private_loop is not None:
            self._private_loop.close()
            self._private_loop = None

    # -- the policy -----------------------------------------------------------------------------
    def _make_room(self, engine_id: str, *, blocking_allowed: bool) -> bool:
        """True when this engine's next send may go out now (its previous one is done, or was waited for)."""
        if not self.busy(engine_id):
            return True
        if self.policy.busy is Busy.DROP_STALE:
            return False
        if not blocking_allowed:
            raise RuntimeError("Busy.WAIT cannot block the running event loop; use Busy.DROP_STALE there")
        self._wait_for(engine_id)
        return True

    def _wait_for(self, engine_id: str) -> None:
        future = self._inflight.pop(engine_id, None)
        if not isinstance(future, concurrent.futures.Future) or future.done():
            return
        loop = self._server_loop
        if loop is not None and (loop.is_closed() or not loop.is_running()):
            future.cancel()  # the server is shutting down: nothing will run it
            return
        done, _ = concurrent.futures.wait([future], SEND_TIMEOUT_SECS)
        if not done:
            future.cancel()  # timed out: counted (or not: the policy) and logged by _sent, like a failure

    def _sent(self, engine_id: str, future: concurrent.futures.Future[None] | asyncio.Future[None]) -> None:
        if future.cancelled():
            if self.policy.cancelled_is_error and not self._closing:
                self.errors += 1
                log.warning("the %s send of %s timed out on the server loop", self.what, engine_id)
        elif future.exception() is not None:
            self.errors += 1
            log.error("the %s send of %s failed: %r", self.what, engine_id, future.exception())


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
