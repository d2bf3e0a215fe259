"""`/ws/status/`: the latest snapshot of every engine on connect, then every new one, in seq order.

Frames are `{"type": "snapshot", "engine_id", "seq", "snapshot", "html"}` (`?format=json` leaves out
`html`), encoded once per snapshot per process (statuspanel.stream.frames), not once per client.
With `?patch=1` a client that holds an engine's frame gets `{"type": "patch", ...}` frames after it
(statuspanel.stream.patches): only when it holds exactly the patch's `base` (what was last sent to
it, tracked here per engine); otherwise the full frame.
Clients may send `{"type": "ping"}` (answered with a pong) or `{"type": "resync"}` (the latest
snapshots again; `{"type": "resync", "engine_id": id}`: that engine's only); anything else gets an
error frame and the connection stays open. A message over
MAX_CLIENT_MESSAGE closes the connection with 4009 and the reason (1009 is a code the server side
of this stack cannot send).

A client that asks with `alerts=1` (the panel does) also gets the alerts frame
(statuspanel/stream/alerts.py, docs/ALERTS.md): the whole set of firing alerts on connect, on a
resync, and whenever it changes; without it the stream is exactly as it was before alerts.

Fan-out: a consumer does not join the snapshot group itself; the process's `Fanout` (one per loop
and layer, statuspanel.stream.fanout) receives each snapshot once and hands every viewer the frame
(`push_snapshot`). Where the server offers a shared send (vastmanager.server's `send_shared`, in the
scope's extensions) a frame goes straight to the socket in that call; otherwise it is sent through
ASGI by a flush task, newest per engine. A consumer opens a channel of its own only for the alerts
group (a client that asks for alerts): on the Redis layer every channel is a SUBSCRIBE at connect
and an UNSUBSCRIBE at disconnect, one at a time over the layer's connection.

Back-pressure: where the server gives the connection a send window (vastmanager.backpressure), a
client that falls behind is sent nothing while its window is closed; only the latest frame of
each engine is kept for it (a reference to the frame every client shares) and sent when it has
caught up. The server drops a client whose window stays closed too long.
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Callable
from urllib.parse import parse_qs

from autobahn.exception import Disconnected
from channels.db import database_sync_to_async
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from channels.utils import await_many_dispatch

from gpu_engine import wire
from gpu_engine.schema import SnapshotDocument
from statuspanel.auth import can_read_status, session_is_current
from statuspanel.render.engine import engine_id_of
from statuspanel.stream import alerts as alerts_frame
from statuspanel.stream import patches
from statuspanel.stream.fanout import Fanout, fanout_for
from statuspanel.stream.frames import encoded_snapshot_frame_async, snapshot_frame
from vastmanager.backpressure import SendWindow, send_window
from vastmanager.wscompress import SHARED_SEND

log = logging.getLogger(__name__)

MAX_CLIENT_MESSAGE = 64 * 1024
CLOSE_MESSAGE_TOO_BIG = 4009
CLOSE_POLICY_VIOLATION = 4403
ALERTS_KEY = " alerts"  # its slot among the frames kept for a client behind (no engine id has a space)


class StatusConsumer(AsyncWebsocketConsumer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.with_html = True
        self.last_seq: dict[str, int] = {}
        self.joined = False
        self.window: SendWindow | None = None
        self.pending: dict[str, tuple[str, int | None]] = {}  # engine id -> its latest frame not yet sent, its seq
        self.patches = False
        self.sent: dict[str, int] = {}  # engine id -> the seq of the last frame of it handed to the socket
        self.flushing: asyncio.Task[None] | None = None
        self.alerts_group: str | None = None  # set when the client asked for the alerts frame
        self.alerts_seq = -1
        self.fanout: Fanout | None = None  # set while this viewer is served by the process's fan-out
        self.shared_send: Callable[[str], bool] | None = None  # the server's direct send, where it offers one

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Channels' AsyncConsumer.__call__ (channels 4), except that the channel is opened on demand
        (`_open_channel`): until then the channel source waits on an event, costing nothing."""
        self.scope = scope
        self.channel_layer = get_channel_layer(self.channel_layer_alias)
        self.channel_name = ""
        self._channel_open = asyncio.Event()
        self.base_send = send
        try:
            await await_many_dispatch([receive, self._channel_message], self.dispatch)
        except StopConsumer:
            pass
        finally:
            if self.fanout is not None:  # ended without a disconnect (a crash, the server stopping)
                self.fanout.drop(self)
                self.fanout = None

    async def _channel_message(self) -> dict[str, Any]:
        await self._channel_open.wait()
        message: dict[str, Any] = await self.channel_layer.receive(self.channel_name)  # channels is untyped
        return message

    async def _open_channel(self) -> str:
        if not self.channel_name:
            self.channel_name = await self.channel_layer.new_channel()
            self._channel_open.set()
        return self.channel_name

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Snapshot fan-out never touches the ORM: skip the base class's per-message
        # aclose_old_connections() thread hop, which halves throughput at hundreds of clients.
        if message.get("type") == wire.MESSAGE_TYPE:
            await self.status_snapshot(message)
            return
        if message.get("type") == alerts_frame.MESSAGE_TYPE:
            await self.status_alerts(message)
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
        patch = (query.get("patch") or ["0"])[0]
        if patch not in ("0", "1"):
            await self.close(code=CLOSE_POLICY_VIOLATION)
            return
        self.with_html = fmt == "html"
        wants_alerts = (query.get("alerts") or ["0"])[0]
        if wants_alerts not in ("0", "1"):
            await self.close(code=CLOSE_POLICY_VIOLATION)
            return
        self.patches = patch == "1"
        self.window = send_window(self.scope)
        if self.window is not None:
            self.window.on_open(self._window_opened)
        shared_send = (self.scope.get("extensions") or {}).get(SHARED_SEND)
        self.shared_send = shared_send if callable(shared_send) else None
        if wants_alerts == "1":
            from statuspanel.alerts.broadcast import ALERTS_GROUP

            await self.channel_layer.group_add(ALERTS_GROUP, await self._open_channel())
            self.alerts_group = ALERTS_GROUP
        await self.accept()
        # Join before reading the cache: a snapshot published in between arrives twice at worst,
        # and the seq check drops the second copy.
        self.fanout = fanout_for(self.channel_layer)
        await self.fanout.join(self)
        self.joined = True
        await self.send_latest()

    async def websocket_disconnect(self, message: dict[str, Any]) -> None:
        self.pending.clear()
        if self.flushing is not None:
            self.flushing.cancel()
        if self.fanout is not None:
            fanout, self.fanout = self.fanout, None
            await fanout.leave(self)
            self.joined = False
        if self.alerts_group is not None:
            await self.channel_layer.group_discard(self.alerts_group, self.channel_name)
            self.alerts_group = None
        raise StopConsumer()

    async def send_latest(self, engine_id: str | None = None) -> None:
        """The latest snapshot of every engine (or of one), and the alerts frame with all of them."""
        live, _gone = wire.latest_snapshots()
        for snap in live:
            if engine_id is None or engine_id_of(snap) == engine_id:
                await self.send_snapshot(snap)
        if engine_id is None and self.alerts_group is not None:
            await self.send_alerts()

    async def send_alerts(self) -> None:
        """The latest alerts frame (the stream's, or read now where no stream runs in this process)."""
        from statuspanel.alerts.broadcast import frames_now

        seq, as_json, as_html = await database_sync_to_async(frames_now)()
        self.alerts_seq = max(self.alerts_seq, seq)
        await self.deliver(ALERTS_KEY, as_html if self.with_html else as_json)

    async def status_alerts(self, message: dict[str, Any]) -> None:
        seq, frame = message.get("seq"), message.get("html" if self.with_html else "json")
        if self.alerts_group is None or not isinstance(seq, int) or not isinstance(frame, str):
            return
        if seq <= self.alerts_seq:
            return  # the client has this set already (sent on connect) or a newer one
        self.alerts_seq = seq
        await self.deliver(ALERTS_KEY, frame)

    # -- outgoing -------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        try:
            await self.send(text_data=text)
        except Disconnected:
            pass  # the client left while this was on its way (a server without the guarded protocol)

    async def send_frame(self, engine_id: str, frame: str, seq: int | None) -> None:
        if seq is not None:
            self.sent[engine_id] = seq
        if self.shared_send is not None:
            self.shared_send(frame)
        else:
            await self.send_text(frame)

    def _can_send_now(self) -> bool:
        window = self.window
        return not self.pending and (window is None or window.is_open)

    def offer(self, engine_id: str, frame: str, seq: int | None = None) -> None:
        """Send an engine's frame now where the server takes it in this call (the shared send, window
        open, nothing kept before it); otherwise keep it as that engine's latest, sent by `_flush`.

        A kept frame that is a patch was built from what was sent before it (`sent`), never from the
        frame it replaces: the replaced one is never sent."""
        if self.shared_send is not None and self._can_send_now():
            if seq is not None:
                self.sent[engine_id] = seq
            self.shared_send(frame)
            return
        self.pending.pop(engine_id, None)  # an older frame of this engine is never sent now
        self.pending[engine_id] = (frame, seq)
        self._window_opened()

    async def deliver(self, engine_id: str, frame: str, seq: int | None = None) -> None:
        """Send an engine's frame now, or keep it as that engine's latest while the client is behind."""
        if self.shared_send is None and self._can_send_now():
            await self.send_frame(engine_id, frame, seq)
            return
        self.offer(engine_id, frame, seq)

    def _window_opened(self) -> None:
        if self.pending and self.flushing is None and (self.window is None or self.window.is_open):
            self.flushing = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        try:
            while self.pending and (self.window is None or self.window.is_open):
                engine_id = next(iter(self.pending))
                frame, seq = self.pending.pop(engine_id)
                await self.send_frame(engine_id, frame, seq)
        finally:
            self.flushing = None

    async def send_snapshot(self, snap: SnapshotDocument) -> None:
        engine_id, seq = engine_id_of(snap), snap.get("seq")
        if isinstance(seq, int):
            if seq <= self.last_seq.get(engine_id, -1):
                return  # stale or duplicate: never move a client backwards
            self.last_seq[engine_id] = seq
        frame = snapshot_frame(snap, with_html=self.with_html)
        await self.deliver(engine_id, frame, seq if isinstance(seq, int) else None)

    def push_snapshot(self, engine_id: str, seq: int, frame: str) -> None:
        """The fan-out's frame of (engine, seq): sent (or kept) unless this client has it or a newer one."""
        if seq <= self.last_seq.get(engine_id, -1):
            return  # stale or duplicate: never move a client backwards
        self.last_seq[engine_id] = seq
        if self.patches and engine_id in self.sent:
            patch = patches.patch_frame(engine_id, self.sent[engine_id], seq, self.with_html)
            frame = frame if patch is None else patch
        self.offer(engine_id, frame, seq)

    def push_document(self, snap: SnapshotDocument) -> None:
        engine_id, seq = engine_id_of(snap), snap.get("seq")
        if isinstance(seq, int):
            if seq <= self.last_seq.get(engine_id, -1):
                return
            self.last_seq[engine_id] = seq
        self.offer(engine_id, snapshot_frame(snap, with_html=self.with_html), seq if isinstance(seq, int) else None)

    async def status_snapshot(self, message: dict[str, Any]) -> None:
        """A snapshot message sent to this consumer's own channel (the fan-out sends it none)."""
        engine_id, seq, encoded = message.get("engine_id"), message.get("seq"), message.get("snapshot_json")
        if isinstance(encoded, str) and isinstance(engine_id, str) and isinstance(seq, int):
            if seq <= self.last_seq.get(engine_id, -1):
                return
            frame = await encoded_snapshot_frame_async(engine_id, seq, encoded, with_html=self.with_html)
            if frame is not None:  # None: overtaken by a newer snapshot of this engine, on its way
                self.push_snapshot(engine_id, seq, frame)
            return
        snap = message.get("snapshot")
        if isinstance(snap, dict):
            self.push_document(snap)

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
            engine_id = msg.get("engine_id")
            if engine_id is None:
                self.last_seq.clear()
                self.pending.clear()
                self.sent.clear()
                self.alerts_seq = -1
                await self.send_latest()
            elif isinstance(engine_id, str):
                self.last_seq.pop(engine_id, None)
                self.pending.pop(engine_id, None)
                self.sent.pop(engine_id, None)
                await self.send_latest(engine_id)
            else:
                await self.send_error("resync: engine_id must be a string")
        else:
            await self.send_error('unknown message; expected {"type": "ping"} or {"type": "resync"}')
