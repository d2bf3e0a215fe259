"""`/ws/status/`: the latest snapshot of every engine on connect, then every new one, in seq order.

Frames are `{"type": "snapshot", "engine_id", "seq", "snapshot", "html"}` (`?format=json` leaves out
`html`), encoded once per snapshot per process (statuspanel.stream.frames), not once per client.
Clients may send `{"type": "ping"}` (answered with a pong) or `{"type": "resync"}` (the latest
snapshots again); anything else gets an error frame and the connection stays open. A message over
MAX_CLIENT_MESSAGE closes the connection with 4009 and the reason (1009 is a code the server side
of this stack cannot send).

Back-pressure: where the server gives the connection a send window (vastmanager.backpressure), a
client that falls behind is sent nothing while its window is closed; only the latest frame of
each engine is kept for it (a reference to the frame every client shares) and sent when it has
caught up. The server drops a client whose window stays closed too long.
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Any
from urllib.parse import parse_qs

from autobahn.exception import Disconnected
from channels.db import database_sync_to_async
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer

from gpu_engine import wire
from gpu_engine.schema import SnapshotDocument
from statuspanel.auth import can_read_status, session_is_current
from statuspanel.render.engine import engine_id_of
from statuspanel.stream.frames import encoded_snapshot_frame_async, snapshot_frame
from vastmanager.backpressure import SendWindow, send_window

log = logging.getLogger(__name__)

MAX_CLIENT_MESSAGE = 64 * 1024
CLOSE_MESSAGE_TOO_BIG = 4009
CLOSE_POLICY_VIOLATION = 4403


class StatusConsumer(AsyncWebsocketConsumer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.with_html = True
        self.last_seq: dict[str, int] = {}
        self.joined = False
        self.window: SendWindow | None = None
        self.pending: dict[str, str] = {}  # engine id -> its latest frame not yet sent (window closed)
        self.flushing: asyncio.Task[None] | None = None

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Snapshot fan-out never touches the ORM: skip the base class's per-message
        # aclose_old_connections() thread hop, which halves throughput at hundreds of clients.
        if message.get("type") == wire.MESSAGE_TYPE:
            await self.status_snapshot(message)
            return
        await super().dispatch(message)

    # -- lifecycle ------------------------------------------------------------------------------
    def _authenticated(self, query: dict[str, list[str]]) -> bool:
        token = (query.get("token") or [""])[0]
        if token:
            return can_read_status(token)  # the stream only reads: the status token may open it
        user = self.scope.get("user")
        if user is not None and getattr(user, "is_authenticated", False):
            session = self.scope.get("session")
            return session is not None and session_is_current(session, user)
        return False

    async def connect(self) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        # In a thread: the token may be read from its file, the session from the database.
        if not await database_sync_to_async(self._authenticated)(query):
            await self.close(code=CLOSE_POLICY_VIOLATION)
            return
        fmt = (query.get("format") or ["html"])[0]
        if fmt not in ("html", "json"):
            await self.close(code=CLOSE_POLICY_VIOLATION)
            return
        self.with_html = fmt == "html"
        self.window = send_window(self.scope)
        if self.window is not None:
            self.window.on_open(self._window_opened)
        # Join before reading the cache: a snapshot published in between arrives twice at worst,
        # and the seq check drops the second copy.
        await self.channel_layer.group_add(wire.STATUS_GROUP, self.channel_name)
        self.joined = True
        await self.accept()
        await self.send_latest()

    async def websocket_disconnect(self, message: dict[str, Any]) -> None:
        self.pending.clear()
        if self.flushing is not None:
            self.flushing.cancel()
        if self.joined:
            await self.channel_layer.group_discard(wire.STATUS_GROUP, self.channel_name)
            self.joined = False
        raise StopConsumer()

    async def send_latest(self) -> None:
        live, _gone = wire.latest_snapshots()
        for snap in live:
            await self.send_snapshot(snap)

    # -- outgoing -------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        try:
            await self.send(text_data=text)
        except Disconnected:
            pass  # the client left while this was on its way (a server without the guarded protocol)

    async def deliver(self, engine_id: str, frame: str) -> None:
        """Send an engine's frame now, or keep it as that engine's latest while the client is behind."""
        window = self.window
        if window is None or (window.is_open and not self.pending):
            await self.send_text(frame)
            return
        self.pending.pop(engine_id, None)  # an older frame of this engine is never sent now
        self.pending[engine_id] = frame
        if window.is_open:
            self._window_opened()

    def _window_opened(self) -> None:
        if self.pending and self.flushing is None:
            self.flushing = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        try:
            while self.pending and self.window is not None and self.window.is_open:
                engine_id = next(iter(self.pending))
                await self.send_text(self.pending.pop(engine_id))
        finally:
            self.flushing = None

    async def send_snapshot(self, snap: SnapshotDocument) -> None:
        engine_id, seq = engine_id_of(snap), snap.get("seq")
        if isinstance(seq, int):
            if seq <= self.last_seq.get(engine_id, -1):
                return  # stale or duplicate: never move a client backwards
            self.last_seq[engine_id] = seq
        await self.deliver(engine_id, snapshot_frame(snap, with_html=self.with_html))

    async def status_snapshot(self, message: dict[str, Any]) -> None:
        engine_id, seq, encoded = message.get("engine_id"), message.get("seq"), message.get("snapshot_json")
        if isinstance(encoded, str) and isinstance(engine_id, str) and isinstance(seq, int):
            if seq <= self.last_seq.get(engine_id, -1):
                return
            self.last_seq[engine_id] = seq
            frame = await encoded_snapshot_frame_async(engine_id, seq, encoded, with_html=self.with_html)
            if frame is not None:  # None: overtaken by a newer snapshot of this engine, on its way
                await self.deliver(engine_id, frame)
            return
        snap = message.get("snapshot")
        if isinstance(snap, dict):
            await self.send_snapshot(snap)

    async def send_error(self, error: str) -> None:
        await self.send_text(json.dumps({"type": "error", "error": error}))

    # -- incoming -------------------------------------------------------------------------------
    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        size = len(text_data.encode()) if text_data is not None else len(bytes_data or b"")
        if size > MAX_CLIENT_MESSAGE:
            await self.close(code=CLOSE_MESSAGE_TOO_BIG, reason=f"message over {MAX_CLIENT_MESSAGE} bytes")
            return
        if text_data is None:
            await self.send_error("binary messages are not accepted; send JSON text")
            return
        try:
            msg = json.loads(text_data)
        except (ValueError, RecursionError) as exc:  # RecursionError: nesting too deep to decode
            await self.send_error(f"malformed JSON: {str(exc)[:200]}")
            return
        kind = msg.get("type") if isinstance(msg, dict) else None
        if kind == "ping":
            await self.send_text(json.dumps({"type": "pong"}))
        elif kind == "resync":
            self.last_seq.clear()
            self.pending.clear()
            await self.send_latest()
        else:
            await self.send_error('unknown message; expected {"type": "ping"} or {"type": "resync"}')
