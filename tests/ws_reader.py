"""A lean WebSocket reader for the fan-out benchmarks: hundreds of them share the server's cores.

A full client library (websockets) spends ~70 us of Python per 26 KB frame on a stream reader,
frame objects and a message queue; at 500 clients on a 2-core machine the clients' own process then
takes tens of milliseconds to get through one snapshot's burst, and that is most of the "latency"
measured. This reader does the handshake, then parses the server's frames in place in one buffer
(unmasked, unfragmented: what the panel's server sends) and hands each text or binary message to a
callback as (buffer, start, end) without copying it; it answers pings and stops at a close. With
`compression` it offers permessage-deflate and inflates each compressed message (RSV1), from a fresh
state as the server compresses (server_no_context_takeover).
"""
from __future__ import annotations

import asyncio
import base64
import os
import struct
import time
import zlib
from collections.abc import Callable

# (message, start, end, receive time): the message is message[start:end]; valid only during the call.
OnMessage = Callable[[bytes | bytearray, int, int, float], None]
DEFLATE_TAIL = b"\x00\x00\xff\xff"


class HandshakeError(Exception):
    """The server did not switch protocols (its status line says why)."""


class FrameReader(asyncio.Protocol):
    def __init__(self, path: str, host: str, origin: str, on_message: OnMessage, *, compression: bool = False,
                 wire: list[int] | None = None, counting: list[bool] | None = None) -> None:
        self.path, self.host, self.origin = path, host, origin
        self.on_message = on_message
        self.compression = compression
        self.deflated = False  # the server accepted permessage-deflate
        self.wire, self.counting = wire, counting
        self.buf = bytearray()
        self.open: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        key = base64.b64encode(os.urandom(16)).decode()
        offer = "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n" if self.compression else ""
        transport.write((f"GET {self.path} HTTP/1.1\r\nHost: {self.host}\r\nUpgrade: websocket\r\n"
                         f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                         f"Origin: {self.origin}\r\n{offer}\r\n").encode())

    def data_received(self, data: bytes) -> None:
        now = time.time()
        if self.wire is not None and (self.counting is None or self.counting[0]):
            self.wire[0] += len(data)
        buf = self.buf
        buf += data
        pos = 0
        if not self.open.done():
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buf[:end]).decode("latin-1")
            if not head.startswith("HTTP/1.1 101"):
                self.open.set_exception(HandshakeError(head.split("\r\n", 1)[0]))
                if self.transport is not None:
                    self.transport.close()
                return
            self.deflated = "permessage-deflate" in head.lower()
            self.open.set_result(None)
            pos = end + 4
        pos = self._frames(buf, pos, now)
        del buf[:pos]

    def _frames(self, buf: bytearray, pos: int, now: float) -> int:
        """Hand every complete frame from `pos` on to its handler; the offset of the first incomplete one."""
        size = len(buf)
        while size - pos >= 2:
            b0, length = buf[pos], buf[pos + 1] & 0x7F
            head = 2
            if length == 126:
                if size - pos < 4:
                    break
                (length,), head = struct.unpack_from("!H", buf, pos + 2), 4
            elif length == 127:
                if size - pos < 10:
                    break
                (length,), head = struct.unpack_from("!Q", buf, pos + 2), 10
            start, end = pos + head, pos + head + length
            if end > size:
                break
            opcode = b0 & 0x0F
            if opcode in (1, 2):
                if not b0 & 0x80:
                    raise ValueError("a fragmented message (the panel's server sends none)")
                if b0 & 0x40 and self.deflated:
                    message = zlib.decompressobj(-15).decompress(bytes(buf[start:end]) + DEFLATE_TAIL)
                    self.on_message(message, 0, len(message), now)
                else:
                    self.on_message(buf, start, end, now)
            elif opcode == 9:  # ping: a pong with its payload, masked as a client must
                self._send(10, bytes(buf[start:end]))
            elif opcode == 8 and self.transport is not None:
                self.transport.close()
            pos = end
        return pos

    def _send(self, opcode: int, payload: bytes) -> None:
        if self.transport is None or len(payload) > 125:
            return
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.transport.write(bytes((0x80 | opcode, 0x80 | len(payload))) + mask + masked)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.open.done():
            self.open.set_exception(exc or ConnectionError("closed during the handshake"))
        if not self.closed.done():
            self.closed.set_result(None)


async def read_messages(port: int, path: str, on_message: OnMessage, *, compression: bool = False,
                        wire: list[int] | None = None, counting: list[bool] | None = None,
                        open_timeout: float = 60) -> FrameReader:
    """Connect to 127.0.0.1:`port`, open `path` (origin: the server's own) and read until closed; the
    reader is returned once open (`.closed` completes when the connection ends)."""
    loop = asyncio.get_running_loop()
    host = f"127.0.0.1:{port}"
    _transport, reader = await loop.create_connection(
        lambda: FrameReader(path, host, f"http://{host}", on_message, compression=compression, wire=wire,
                            counting=counting), "127.0.0.1", port)
    await asyncio.wait_for(reader.open, open_timeout)
    return reader
