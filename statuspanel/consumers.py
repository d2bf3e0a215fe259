"""`/ws/status/`: the latest snapshot of every engine on connect, then every new one, in seq order.

Frames are `{"type": "snapshot", "engine_id", "seq", "snapshot", "html"}` (`?format=json` leaves out
`html`), encoded once per snapshot per process (statuspanel.rendering), not once per client.
Clients may send `{"type": "ping"}` (answered with a pong) or `{"type": "resync"}` (the latest
snapshots again); anything else gets an error frame and the connection stays open.
"""
from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import parse_qs

from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer

from gpu_engine import wire
from statuspanel.auth import can_read_status
from statuspanel.rendering import encoded_snapshot_frame_async, engine_id_of, snapshot_frame

log = logging.getLogger(__name__)

MAX_CLIENT_MESSAGE = 64 * 1024
CLOSE_MESSAGE_TOO_BIG = 1009
CLOSE_POLICY_VIOLATION = 4403


class StatusConsumer(AsyncWebsocketConsumer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.with_html = True
        self.last_seq: dict[str, int] = {}
        self.joined = False

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Snapshot fan-out never touches the ORM: skip the base class's per-message
        # aclose_old_connections() thread hop, which halves throughput at hundreds of clients.
        if message.get("type") == wire.MESSAGE_TYPE:
            await self.status_snapshot(message)
            return
        await super().dispatch(message)

    # -- lifecycle ------------------------------------------------------------------------------
    def _authenticated(self, query: dict[str, list[str]]) -> bool:
        user = self.scope.get("user")
        if user is not None and getattr(user, "is_authenticated", False):
            return True
        token = (query.get("token") or [""])[0]
        return bool(token) and can_read_status(token)  # the stream only reads: the status token may

    async def connect(self) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        if not self._authenticated(query):
            await self.close(code=CLOSE_POLICY_VIOLATION)
            return
        fmt = (query.get("format") or ["html"])[0]
        if fmt not in ("html", "json"):
            await self.close(code=CLOSE_POLICY_VIOLATION)
            return
        self.with_html = fmt == "html"
        # Join before reading the cache: a snapshot published in between arrives twice at worst,
        # and the seq check drops the second copy.
        await self.channel_layer.group_add(wire.STATUS_GROUP, self.channel_name)
        self.joined = True
        await self.accept()
        await self.send_latest()

    async def websocket_disconnect(self, message: dict[str, Any]) -> None:
        if self.joined:
            await self.channel_layer.group_discard(wire.STATUS_GROUP, self.channel_name)
            self.joined = False
        raise StopConsumer()

    async def send_latest(self) -> None:
        live, _gone = wire.latest_snapshots()
        for snap in live:
            await self.send_snapshot(snap)

    # -- outgoing -------------------------------------------------------------------------------
    async def send_snapshot(self, snap: dict[str, Any]) -> None:
        engine_id, seq = engine_id_of(snap), snap.get("seq")
        if isinstance(seq, int):
            if seq <= self.last_seq.get(engine_id, -1):
                return  # stale or duplicate: never move a client backwards
            self.last_seq[engine_id] = seq
        await self.send(text_data=snapshot_frame(snap, with_html=self.with_html))

    async def status_snapshot(self, message: dict[str, Any]) -> None:
        engine_id, seq, encoded = message.get("engine_id"), message.get("seq"), message.get("snapshot_json")
        if isinstance(encoded, str) and isinstance(engine_id, str) and isinstance(seq, int):
            if seq <= self.last_seq.get(engine_id, -1):
                return
            self.last_seq[engine_id] = seq
            frame = await encoded_snapshot_frame_async(engine_id, seq, encoded, with_html=self.with_html)
            await self.send(text_data=frame)
            return
        snap = message.get("snapshot")
        if isinstance(snap, dict):
            await self.send_snapshot(snap)

    async def send_error(self, error: str) -> None:
        await self.send(text_data=json.dumps({"type": "error", "error": error}))

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
            await self.send(text_data=json.dumps({"type": "pong"}))
        elif kind == "resync":
            self.last_seq.clear()
            await self.send_latest()
        else:
            await self.send_error('unknown message; expected {"type": "ping"} or {"type": "resync"}')
