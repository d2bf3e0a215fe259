"""The snapshot stream's fan-out in one process: one channel-layer member, not one per viewer.

Every `/ws/status/` viewer of a process gets the same frames. Left to the channel layer, each snapshot
costs one message per viewer: a queued copy, a wake-up of the viewer's receive task, a new task per
message (Channels' `await_many_dispatch`) and, on the Redis layer, one decode of the message per
viewer. At 500 viewers and 10 snapshots a second that was most of the server's CPU (profiled with
bench/websocket.py's BENCH_PROFILE). Here a `Fanout` per (event loop, layer) joins `STATUS_GROUP`
once, receives each snapshot once, builds its frame once per format (statuspanel.stream.frames), and
hands it to every viewer in one pass by a plain call (`Viewer.push_snapshot`); a viewer sends it
straight to its socket when it can (the guarded server's shared send, vastmanager.server).

Per engine, snapshots are handled in order by one task of that engine, and a snapshot that arrives
while the engine's previous frame is still being built replaces any other one waiting: a huge
engine's render never holds up the other engines' frames, and a busy loop fans out the newest
snapshot of each engine, not a backlog (the rule the in-memory layer applies per member, one step
earlier). The group membership is taken with the first viewer, renewed every `REJOIN_SECS` (the
in-memory layer forgets memberships after its group expiry and those of a channel it found behind)
and given up with the last viewer.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from gpu_engine import wire
from gpu_engine.schema import SnapshotDocument
from statuspanel.stream.frames import encoded_snapshot_frame_async

log = logging.getLogger(__name__)

REJOIN_SECS = 600.0


class Viewer(Protocol):
    """What the fan-out needs of a consumer (statuspanel.stream.consumer.StatusConsumer)."""

    with_html: bool

    def push_snapshot(self, engine_id: str, seq: int, frame: str) -> None:
        """The frame of (engine, seq), built once for every viewer of this format."""

    def push_document(self, snap: SnapshotDocument) -> None:
        """A snapshot that arrived as a document rather than pre-encoded."""


class Fanout:
    """One group member for all the viewers of one event loop on one channel layer."""

    def __init__(self, layer: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.layer = layer
        self.loop = loop
        self.viewers: dict[Viewer, None] = {}  # insertion-ordered set: viewers are served in join order
        self.channel: str | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._waiting: dict[str, tuple[int, str]] = {}  # engine id -> its newest snapshot not yet fanned out
        self._engines: dict[str, asyncio.Task[None]] = {}  # engine id -> the task fanning out its snapshots
        self._lock = asyncio.Lock()
        self.received = 0  # snapshot messages taken off the layer (tests, figures)

    @property
    def running(self) -> bool:
        return self.channel is not None

    async def join(self, viewer: Viewer) -> None:
        """Add a viewer (it gets every snapshot received from now on); joins the group with the first."""
        self.viewers[viewer] = None
        await self._reconcile()

    async def leave(self, viewer: Viewer) -> None:
        """Remove a viewer at once; the group is left with the last one."""
        self.viewers.pop(viewer, None)
        await self._reconcile()

    def drop(self, viewer: Viewer) -> None:
        """Remove a viewer that cannot await its leave (its consumer ended); the group is left soon after."""
        self.viewers.pop(viewer, None)
        if not self.viewers and self.channel is not None and not self.loop.is_closed():
            self.loop.create_task(self._reconcile())

    async def _reconcile(self) -> None:
        async with self._lock:  # joins and leaves interleave at their awaits: one change of membership at a time
            if self.viewers and self.channel is None:
                channel = await self.layer.new_channel()
                await self.layer.group_add(wire.STATUS_GROUP, channel)
                self.channel = channel
                self._tasks = [self.loop.create_task(self._receive(channel)),
                               self.loop.create_task(self._keep_joined(channel))]
            elif not self.viewers and self.channel is not None:
                channel, self.channel = self.channel, None
                tasks = [*self._tasks, *self._engines.values()]
                self._tasks, self._engines = [], {}
                self._waiting.clear()
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                await self.layer.group_discard(wire.STATUS_GROUP, channel)

    async def _keep_joined(self, channel: str) -> None:
        while True:
            await asyncio.sleep(REJOIN_SECS)
            await self.layer.group_add(wire.STATUS_GROUP, channel)

    async def _receive(self, channel: str) -> None:
        while True:
            message = await self.layer.receive(channel)
            try:
                self._route(message)
            except Exception:  # one malformed message must not end every viewer's stream
                log.exception("status stream: a group message could not be fanned out")

    def _route(self, message: dict[str, Any]) -> None:
        if message.get("type") != wire.MESSAGE_TYPE:
            return
        self.received += 1
        engine_id, seq, encoded = message.get("engine_id"), message.get("seq"), message.get("snapshot_json")
        if isinstance(encoded, str) and isinstance(engine_id, str) and isinstance(seq, int):
            waiting = self._waiting.get(engine_id)
            if waiting is None or seq > waiting[0]:
                self._waiting[engine_id] = (seq, encoded)
            if engine_id not in self._engines:
                self._engines[engine_id] = self.loop.create_task(self._fan_out_engine(engine_id))
            return
        snap = message.get("snapshot")
        if isinstance(snap, dict):
            for viewer in list(self.viewers):
                try:
                    viewer.push_document(snap)
                except Exception:  # as above
                    log.exception("status stream: a viewer could not be sent a snapshot document")

    async def _fan_out_engine(self, engine_id: str) -> None:
        try:
            while (waiting := self._waiting.pop(engine_id, None)) is not None:
                try:
                    await self._fan_out(engine_id, *waiting)
                except Exception:  # a frame that fails to build: the engine's next one is tried
                    log.exception("status stream: engine %s's frame could not be built", engine_id)
        finally:
            if self._engines.get(engine_id) is asyncio.current_task():
                del self._engines[engine_id]

    async def _fan_out(self, engine_id: str, seq: int, encoded: str) -> None:
        frames: dict[bool, str | None] = {}
        for with_html in sorted({viewer.with_html for viewer in self.viewers}):
            frames[with_html] = await encoded_snapshot_frame_async(engine_id, seq, encoded, with_html=with_html)
        for viewer in list(self.viewers):
            # A viewer that joined while the frames were built read this snapshot (or a newer one) itself.
            frame = frames.get(viewer.with_html)
            if frame is None:  # overtaken by a newer snapshot of the engine, on its way
                continue
            try:
                viewer.push_snapshot(engine_id, seq, frame)
            except Exception:  # one viewer's failure must not cost the others this frame
                log.exception("status stream: a viewer could not be sent engine %s's frame", engine_id)


_fanouts: dict[tuple[int, int], Fanout] = {}


def fanout_for(layer: Any) -> Fanout:
    """The running loop's fan-out on `layer` (made on first use; those of closed loops are forgotten)."""
    loop = asyncio.get_running_loop()
    key = (id(loop), id(layer))
    found = _fanouts.get(key)
    if found is not None and found.loop is loop and found.layer is layer:
        return found
    for old_key, old in list(_fanouts.items()):
        if old.loop.is_closed():
            del _fanouts[old_key]
    found = _fanouts[key] = Fanout(layer, loop)
    return found
