"""The Daphne server vastmanager runs (`runprover`, `manage.py servepanel`), with three guards added.

- Request bodies: the limit of the request (`vastmanager.limits.request_limit`: a path's larger limit
  only with the operator's token, so unauthenticated clients get the default) is applied when the headers end, from
  `Content-Length`, before one byte of the body is read or buffered (Twisted would otherwise spool
  the whole body to a temporary file before the application sees the request); a chunked body is
  cut off when it crosses the limit. The answer is a 413 JSON body, then the connection closes.
- WebSocket back-pressure: each connection's transport drives a `SendWindow` (backpressure.py) that
  the consumer reads from the scope; a client whose window stays closed longer than
  `WS_SLOW_CLIENT_SECS`, or that is written to past `WS_MAX_BUFFERED_BYTES` while closed, is dropped
  with close code 4008, as is one whose own messages pile up unread (MAX_QUEUED_BYTES). The
  `scope["scheme"]` of a WebSocket says ws or wss (the origin check uses it).
- Frames: the WebSocket message limit is `WS_MAX_FRAME_BYTES`, set deliberately (autobahn's one
  limit, both ways); the panel builds every frame to fit it, and a message over it that reaches the
  protocol anyway is not sent (logged) instead of closing the connection 1011 from inside autobahn.
- Compression: permessage-deflate where the client offers it and `WS_COMPRESSION` is on, accepted
  with server_no_context_takeover so a frame is compressed once per process and the same bytes go to
  every viewer (vastmanager.wscompress); the send window and `WS_MAX_BUFFERED_BYTES` count the
  compressed bytes on the wire, `WS_MAX_FRAME_BYTES` the frame before compression.
- Closing: the application's close reason is sent (Daphne drops it), and sends to a socket the
  client already left are discarded instead of raising inside the application.
- Shared sends: the scope's extensions carry `wscompress.SHARED_SEND`, the connection's
  `send_shared(text)`: a message many connections send (the status stream's frames) is encoded,
  compressed and framed once per process (`wscompress.shared_frames`) and written by a plain call, not
  through the ASGI send coroutines. A write to a connection with nothing queued goes to its socket at
  once (`write_through`): Twisted would queue it, register the socket with the loop, write it on the
  next turn and unregister it (two epoll changes and a callback per message, per viewer).

Daphne's `Server.run` builds its two factories inline; the `http_factory` / `ws_factory` setters
below put the guarded ones in their place (the only seam Daphne offers short of copying `run`).
"""
from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import Any, Callable
from urllib.parse import urlsplit

import daphne.server  # noqa: F401 - installs the asyncio reactor before anything imports Twisted's
from daphne.endpoints import build_endpoint_description_strings
from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.server import Server
from daphne.ws_protocol import WebSocketProtocol
from django.conf import settings
from twisted.internet import interfaces, reactor, tcp

from vastmanager import limits, wscompress
from vastmanager.backpressure import EXTENSION, SendWindow

log = logging.getLogger(__name__)

CLOSE_TOO_SLOW = 4008
# Bytes of one client's messages waiting for its consumer: a client sending faster than it is served
# is dropped too (Daphne queues incoming messages without bound; the panel sends one every few seconds).
MAX_QUEUED_BYTES = 1 << 20
# After a refusal the client may still be sending the body: read and discard a little of it (so
# it can read the answer instead of a reset), then cut the connection.
LINGER_SECS = 2.0
LINGER_BYTES = 1 << 20


def write_through(transport: Any, data: bytes) -> None:
    """`transport.write(data)`, sending at once what the socket takes when nothing is queued before it.

    Only a plain TCP connection that is open for writing with an empty buffer qualifies; the rest of
    the data (or all of it, on any socket error: Twisted's own write then meets the error and closes
    the connection its usual way) is left to the transport, whose buffer and producer (the send
    window) count what is really waiting."""
    if (type(transport) is tcp.Server and not transport.TLS and transport.connected and not transport.disconnecting
            and not transport._tempDataBuffer  # noqa: SLF001 - Twisted's buffers: the test that nothing waits
            and transport.offset == len(transport.dataBuffer)):
        try:
            sent = transport.socket.send(data)
        except OSError:  # EAGAIN, or an error Twisted reports on its own write
            sent = 0
        if sent >= len(data):
            return
        data = data[sent:]
    transport.write(data)


class LimitedRequest(WebRequest):
    """An HTTP request whose body may not exceed its path's limit; refused before it is read."""

    limit = 0
    received = 0
    refused = False
    _linger_call = None

    def gotLength(self, length: int | None) -> None:  # noqa: N802 - Twisted's name
        target = getattr(self.channel, "_path", b"/")  # the request line's target, parsed by the channel
        # The headers are all in: a path's larger limit only for the operator's token.
        self.limit = limits.request_limit(target.decode("latin-1"), _flat_headers(self.requestHeaders))
        if length is not None and length > self.limit:
            self._refuse(length)
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:  # noqa: N802 - Twisted's name
        self.received += len(data)
        if self.refused:
            if self.received > LINGER_BYTES:
                self._abort()
            return
        if self.received > self.limit:
            self._refuse(None)
            return
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:  # noqa: N802 - Twisted's name
        if not self.refused:
            super().requestReceived(command, path, version)

    def connectionLost(self, reason: Any) -> None:  # noqa: N802 - Twisted's name
        if self._linger_call is not None and self._linger_call.active():
            self._linger_call.cancel()
        super().connectionLost(reason)

    def _refuse(self, declared: int | None) -> None:
        self.refused = True
        self.received = 0
        self.content = _Discard()
        # No "100 Continue" for a body that will not be read (Twisted sends it after gotLength).
        self.requestHeaders.removeHeader(b"expect")
        body = limits.refusal_body(self.limit, declared)
        head = (b"HTTP/1.1 413 Content Too Large\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body))
        transport = self.channel.transport
        self.channel.persistent = False
        transport.write(head + body)
        half_close = getattr(transport, "loseWriteConnection", None)
        if half_close is not None:
            half_close()
        else:
            transport.loseConnection()
        # zope interface methods are declared without self, so without a zope plugin mypy reads
        # the reactor's callLater as unbound
        self._linger_call = reactor.callLater(LINGER_SECS, self._abort)  # type: ignore[arg-type]
        log.info("refused a request body over %d bytes for %s", self.limit,
                 urlsplit(getattr(self.channel, "_path", b"/").decode("latin-1")).path)

    def _abort(self) -> None:
        channel = self.channel
        if channel is not None and channel.transport is not None:
            channel.transport.abortConnection()


def _flat_headers(headers: Any) -> list[tuple[bytes, bytes]]:
    return [(name, value) for name, values in headers.getAllRawHeaders() for value in values]


class _Discard:
    """What a refused request's content is: nothing is kept."""

    closed = False

    def write(self, data: bytes) -> None:
        pass

    def read(self, size: int = -1) -> bytes:
        return b""

    def seek(self, *args: Any) -> int:
        return 0

    def close(self) -> None:
        self.closed = True


class LimitedHTTPFactory(HTTPFactory):
    def buildProtocol(self, addr: Any) -> Any:  # noqa: N802 - Twisted's name
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = LimitedRequest
        return protocol


class GuardedWebSocketProtocol(WebSocketProtocol):
    """A WebSocket connection with a send window, a bound on a slow client, and quiet closes."""

    send_window: SendWindow
    bytes_while_closed = 0
    dropping = False

    def connectionMade(self) -> None:  # noqa: N802 - Twisted's name
        super().connectionMade()
        self.send_window = SendWindow()
        self.send_window.on_open(self._caught_up)
        transport = self.transport
        # The HTTP channel that did the upgrade is still the transport's producer: take its place.
        if getattr(transport, "producer", None) is not None:
            transport.unregisterProducer()
        transport.registerProducer(self.send_window, True)

    def _caught_up(self) -> None:
        self.bytes_while_closed = 0

    def sendData(self, data: bytes, sync: bool = False, chopsize: int | None = None) -> None:  # noqa: N802 - Twisted's name
        if not self.send_window.is_open and not self.dropping:
            self.bytes_while_closed += len(data)
            if self.bytes_while_closed > settings.WS_MAX_BUFFERED_BYTES:
                self.drop_slow(f"more than {settings.WS_MAX_BUFFERED_BYTES} bytes waiting")
                return
        if sync or (chopsize and chopsize > 0) or self.send_queue or self.logOctets:
            super().sendData(data, sync, chopsize)  # autobahn's queued / chopped / logged sends
            return
        # autobahn's plain send (transport.write and its statistics), written through
        write_through(self.transport, data)
        if self.state == self.STATE_OPEN:
            self.trafficStats.outgoingOctetsWireLevel += len(data)
        elif self.state in (self.STATE_CONNECTING, self.STATE_PROXY_CONNECTING):
            self.trafficStats.preopenOutgoingOctetsWireLevel += len(data)

    def send_shared(self, text: str) -> bool:
        """Send a text message that many connections send, framed once per process; False when not sent
        (the connection is closing or gone, or the message is over the frame limit: logged)."""
        if self.state != self.STATE_OPEN or self.dropping:
            return False
        params = wscompress.shared_compressor(self)
        if params is None and self._perMessageCompress is not None:  # deflate with this connection's own context
            if self._over_limit({"text": text}):
                return False
            self.sendMessage(text.encode(), False)
            return True
        framed = wscompress.shared_frames.frame(text, params)
        if 0 < self.maxMessagePayloadSize < framed.text_bytes:
            log.error("not sending a %d-byte WebSocket message to %s: over the %d-byte frame limit",
                      framed.text_bytes, self.client_addr, self.maxMessagePayloadSize)
            return False
        if 0 < self.autoFragmentSize < framed.payload_bytes:
            self.sendMessage(text.encode(), False)  # autobahn fragments it
            return True
        stats = self.trafficStats
        stats.outgoingWebSocketMessages += 1
        stats.outgoingWebSocketFrames += 1
        stats.outgoingOctetsAppLevel += framed.text_bytes
        stats.outgoingOctetsWebSocketLevel += framed.payload_bytes
        self.sendData(framed.wire)
        return True

    def sendMessage(  # noqa: N802 - Autobahn's name
            self, payload: bytes, isBinary: bool = False, fragmentSize: int | None = None,  # noqa: N803 - Autobahn's
            sync: bool = False, doNotCompress: bool = False) -> None:  # noqa: N803 - Autobahn's name
        """A compressed message's deflate comes from the shared cache: one compression per frame per process."""
        params = wscompress.shared_compressor(self)
        if params is None or doNotCompress or fragmentSize is not None or self.state != self.STATE_OPEN:
            super().sendMessage(payload, isBinary, fragmentSize, sync, doNotCompress)
            return
        if len(payload) < wscompress.MIN_COMPRESS_BYTES:
            super().sendMessage(payload, isBinary, None, sync, True)
            return
        compressed = wscompress.shared_deflate.compress(payload, *params)
        if 0 < self.maxMessagePayloadSize < len(compressed) or 0 < self.autoFragmentSize < len(compressed):
            super().sendMessage(payload, isBinary, None, sync, False)  # autobahn's own refusal / fragmenting
            return
        stats = self.trafficStats
        stats.outgoingWebSocketMessages += 1
        stats.outgoingOctetsAppLevel += len(payload)
        stats.outgoingOctetsWebSocketLevel += len(compressed)
        self.sendFrame(opcode=2 if isBinary else 1, payload=compressed, sync=sync, rsv=4)

    def onMessage(self, payload: bytes, isBinary: bool) -> None:  # noqa: N802, N803 - Autobahn's names
        queue = getattr(self, "application_queue", None)
        if isinstance(queue, MeteredQueue) and queue.queued_bytes + len(payload) > MAX_QUEUED_BYTES:
            if not self.dropping:
                self.drop_slow(f"more than {MAX_QUEUED_BYTES} bytes of its messages waiting to be read")
            return
        super().onMessage(payload, isBinary)

    def check_timeouts(self) -> None:
        super().check_timeouts()
        if not self.dropping and self.send_window.closed_for() > settings.WS_SLOW_CLIENT_SECS:
            self.drop_slow(f"not reading for over {settings.WS_SLOW_CLIENT_SECS:g}s")

    def _over_limit(self, message: dict[str, Any]) -> bool:
        """A message autobahn would refuse to send (and close the connection over): skipped, logged."""
        limit = self.maxMessagePayloadSize
        payload = message.get("text")
        size = (len(payload) if payload.isascii() else len(payload.encode())) if isinstance(payload, str) \
            else len(message.get("bytes") or b"")
        if 0 < limit < size:
            log.error("not sending a %d-byte WebSocket message to %s: over the %d-byte frame limit",
                      size, self.client_addr, limit)
            return True
        return False

    def drop_slow(self, why: str) -> None:
        """Close with 4008 (a client that reads gets the reason) and cut the connection soon after."""
        self.dropping = True
        log.info("dropping slow WebSocket client %s: %s", self.client_addr, why)
        if self.state == self.STATE_OPEN:
            self.sendClose(code=CLOSE_TOO_SLOW, reason=f"client too slow: {why}")
        reactor.callLater(1.0, self._abort)  # type: ignore[arg-type]  # unbound to mypy, as above

    def _abort(self) -> None:
        if self.transport is not None and self.state != self.STATE_CLOSED:
            self.transport.abortConnection()

    def handle_reply(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "websocket.send" and self.state in (self.STATE_CLOSING, self.STATE_CLOSED):
            return  # the client left while a broadcast was on its way: nothing to tell anyone
        if kind == "websocket.send" and self._over_limit(message):
            return
        if kind == "websocket.close" and self.state == self.STATE_OPEN:
            self.sendClose(code=message.get("code") or 1000, reason=message.get("reason") or None)
            return
        super().handle_reply(message)


class MeteredQueue(asyncio.Queue):
    """An application's input queue that knows how many payload bytes wait in it."""

    OVERHEAD = 64  # the message dict around a payload, roughly

    def __init__(self) -> None:
        super().__init__()
        self.queued_bytes = 0

    @classmethod
    def _size(cls, message: dict[str, Any]) -> int:
        return cls.OVERHEAD + len(message.get("text") or message.get("bytes") or b"")

    def put_nowait(self, item: dict[str, Any]) -> None:
        super().put_nowait(item)
        self.queued_bytes += self._size(item)

    def get_nowait(self) -> dict[str, Any]:  # Queue.get ends in get_nowait too
        item = super().get_nowait()
        self.queued_bytes -= self._size(item)
        return item


class GuardedServer(Server):
    """Daphne's server with the guarded HTTP and WebSocket factories."""

    @property
    def http_factory(self) -> HTTPFactory:
        return self._http_factory

    @http_factory.setter
    def http_factory(self, factory: HTTPFactory) -> None:
        self._http_factory = LimitedHTTPFactory(self) if type(factory) is HTTPFactory else factory

    @property
    def ws_factory(self) -> Any:
        return self._ws_factory

    @ws_factory.setter
    def ws_factory(self, factory: Any) -> None:
        factory.protocol = GuardedWebSocketProtocol
        if settings.WS_COMPRESSION:
            accept = (wscompress.accept_offers_with_takeover if settings.WS_COMPRESSION_TAKEOVER
                      else wscompress.accept_offers)
            factory.setProtocolOptions(perMessageCompressionAccept=accept)
        self._ws_factory = factory

    def create_application(self, protocol: Any, scope: dict[str, Any]) -> Any:
        if scope.get("type") != "websocket" or not isinstance(protocol, GuardedWebSocketProtocol):
            return super().create_application(protocol, scope)
        secure = interfaces.ISSLTransport.providedBy(protocol.transport)
        scope.setdefault("scheme", "wss" if secure else "ws")
        scope["extensions"] = {**(scope.get("extensions") or {}), EXTENSION: protocol.send_window,
                               wscompress.SHARED_SEND: protocol.send_shared}
        # Daphne's create_application with a metered input queue (it builds a plain one inline).
        assert "application_instance" not in self.connections[protocol]
        input_queue = MeteredQueue()
        scope.setdefault("asgi", {"version": "3.0"})
        instance = self.application(scope=scope, receive=input_queue.get, send=partial(self.handle_reply, protocol))
        if protocol not in self.connections:
            return None
        self.connections[protocol]["application_instance"] = asyncio.ensure_future(instance)
        return input_queue


def build_server(application: Any, host: str, port: int, *, ready_callable: Callable[[], None] | None = None,
                 signal_handlers: bool = False, verbosity: int = 0,
                 file_descriptor: int | None = None) -> GuardedServer:
    # An inherited listening socket (servepanel --processes; IPv4: the fd endpoint's one family) replaces binding.
    endpoints = ([f"fd:fileno={int(file_descriptor)}"]
                 if file_descriptor is not None else build_endpoint_description_strings(host=host, port=port))
    return GuardedServer(
        application=application,
        endpoints=endpoints,
        signal_handlers=signal_handlers,
        ready_callable=ready_callable,
        verbosity=verbosity,
        websocket_max_message_size=int(settings.WS_MAX_FRAME_BYTES),
        websocket_max_frame_size=int(settings.WS_MAX_FRAME_BYTES),
    )
