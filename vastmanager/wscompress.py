"""permessage-deflate for the panel's WebSocket, compressed once per frame rather than once per client.

Every viewer of the stream is sent the same frames. autobahn compresses each message on each
connection; with context takeover (the default) the output depends on what that connection sent
before, so N viewers cost N compressions of every frame (measured in bench/websocket.py: the
dominant server cost at hundreds of clients). The server therefore accepts a client's offer only
with `server_no_context_takeover` (RFC 7692 lets the server add it to any offer): every message is
then compressed from a fresh deflate state, so the same payload under the same parameters gives the
same bytes, and `SharedDeflate` keeps the last few compressed payloads to hand to every other
connection. Frames are self-contained JSON documents of a few to tens of KB, so the lost context
costs little ratio.

A client that offers nothing (or offers only what the server cannot accept) gets an uncompressed
stream, as before. `WS_COMPRESSION=false` turns the extension off.

`SharedFrames` goes one step further for the messages every viewer is sent (the status stream's
frames, through the guarded server's `send_shared`, named to the application by `SHARED_SEND` in
the WebSocket scope's extensions): text -> UTF-8 -> deflate (or not) -> the WebSocket frame header,
once per process per (text, parameters); each further viewer costs a dictionary lookup and one write
of the same bytes. A server frame is never masked, so these bytes are the same on every connection.
"""
from __future__ import annotations

import struct
import time
import zlib
from collections import OrderedDict
from typing import Any, Callable, NamedTuple

from autobahn.websocket.compress import PerMessageDeflateOffer, PerMessageDeflateOfferAccept

# Payloads shorter than this are sent as they are: deflate's header and the cache lookup cost more
# than the few bytes saved (pongs, errors, small JSON frames).
MIN_COMPRESS_BYTES = 256
# Distinct payloads kept compressed: a fleet publishes a few dozen frames a second, every client of
# a process sends them within a fraction of a second, so a small cache holds every frame in flight.
SHARED_PAYLOADS = 256
# A payload no connection sent for this long is done (its fan-out is over): its entry (a whole
# frame as the key, and its compressed bytes) is let go, so the cache holds the frames in flight,
# not the last 256 a busy engine published (~13 MB of 45 KB frames, growing with time).
SHARED_IDLE_SECS = 2.0
# Distinct framed messages kept (SharedFrames): they are looked up within one fan-out pass (every viewer
# of a frame is written to in one go) and again for a viewer sent its engine's latest frame once it caught
# up; a miss only costs framing again. Kept small: each entry holds a frame and its wire bytes.
SHARED_FRAMES = 64
# The scope extension (`scope["extensions"]`) under which the guarded server hands the application its
# connection's `send_shared(text) -> bool` (vastmanager.server.GuardedWebSocketProtocol.send_shared).
SHARED_SEND = "vastmanager.send_shared"


class NoContextTakeoverAccept(PerMessageDeflateOfferAccept):
    """An acceptance that says server_no_context_takeover in the response even when the client did not
    ask for it (RFC 7692 7.1.1.1 allows it; autobahn writes it only when asked, though it compresses so)."""

    def get_extension_string(self) -> str:
        text = super().get_extension_string()
        return text if "server_no_context_takeover" in text else text + "; server_no_context_takeover"


def accept_offers(offers: list[Any]) -> PerMessageDeflateOfferAccept | None:
    """The first permessage-deflate offer, accepted with server_no_context_takeover; None: no compression."""
    for offer in offers:
        if isinstance(offer, PerMessageDeflateOffer):
            return NoContextTakeoverAccept(offer, no_context_takeover=True)
    return None


def accept_offers_with_takeover(offers: list[Any]) -> PerMessageDeflateOfferAccept | None:
    """The first offer as the client made it (context takeover unless it asked otherwise): each connection
    compresses each frame itself, ~9x smaller than without takeover and ~60 us a frame per client
    (WS_COMPRESSION_TAKEOVER: a few viewers on thin links, not hundreds)."""
    for offer in offers:
        if isinstance(offer, PerMessageDeflateOffer):
            return PerMessageDeflateOfferAccept(offer)
    return None


class SharedDeflate:
    """Compressed payloads by (payload, window bits, memory level): the same bytes for every connection.

    At most `size` entries, and none that no connection asked for in `idle_secs` (runs on the
    server's loop thread only: no lock)."""

    def __init__(self, size: int = SHARED_PAYLOADS, level: int = zlib.Z_DEFAULT_COMPRESSION,
                 idle_secs: float = SHARED_IDLE_SECS, clock: Callable[[], float] = time.monotonic) -> None:
        if size < 1 or not idle_secs > 0:
            raise ValueError(f"size must be >= 1 and idle_secs > 0, got {size} and {idle_secs}")
        self.size = size
        self.level = level
        self.idle_secs = float(idle_secs)
        self.clock = clock
        self._cache: OrderedDict[tuple[bytes, int, int], tuple[bytes, float]] = OrderedDict()  # -> (done, last use)
        self.hits = 0
        self.misses = 0

    def compress(self, payload: bytes, window_bits: int, mem_level: int) -> bytes:
        key = (payload, window_bits, mem_level)
        now = self.clock()
        entry = self._cache.get(key)
        if entry is not None:
            self.hits += 1
            self._cache[key] = (entry[0], now)
            self._cache.move_to_end(key)
            return entry[0]
        self.misses += 1
        done = deflate_message(payload, window_bits, mem_level, self.level)
        self._cache[key] = (done, now)
        # Least recently used first: drop while over the size or idle too long.
        while self._cache and (len(self._cache) > self.size
                               or next(iter(self._cache.values()))[1] < now - self.idle_secs):
            self._cache.popitem(last=False)
        return done

    def __len__(self) -> int:
        return len(self._cache)


def deflate_message(payload: bytes, window_bits: int, mem_level: int, level: int = zlib.Z_DEFAULT_COMPRESSION) -> bytes:
    """One permessage-deflate message body, compressed from a fresh state (no context takeover)."""
    deflate = zlib.compressobj(level, zlib.DEFLATED, -window_bits, mem_level)
    done = deflate.compress(payload) + deflate.flush(zlib.Z_SYNC_FLUSH)
    # RFC 7692 7.2.1: the sync flush's empty stored block (00 00 ff ff) is left off.
    return done[:-4] if done.endswith(b"\x00\x00\xff\xff") else done


shared_deflate = SharedDeflate()


class Framed(NamedTuple):
    """A text message as it goes on the wire: header and payload, and the sizes autobahn's statistics count."""

    wire: bytes
    text_bytes: int  # the UTF-8 payload (what WS_MAX_FRAME_BYTES bounds)
    payload_bytes: int  # the payload on the wire (compressed or not)


def frame_header(opcode: int, payload_len: int, *, compressed: bool) -> bytes:
    """An unfragmented, unmasked frame's header (RFC 6455 5.2; RSV1 marks a deflated message, RFC 7692)."""
    b0 = 0x80 | (0x40 if compressed else 0) | opcode
    if payload_len <= 125:
        return bytes((b0, payload_len))
    if payload_len <= 0xFFFF:
        return bytes((b0, 126)) + struct.pack("!H", payload_len)
    return bytes((b0, 127)) + struct.pack("!Q", payload_len)


class SharedFrames:
    """Framed text messages by (text, deflate parameters or None): built once, written by every connection."""

    def __init__(self, size: int = SHARED_FRAMES, level: int = zlib.Z_DEFAULT_COMPRESSION) -> None:
        self.size = size
        self.level = level
        self._cache: OrderedDict[tuple[str, tuple[int, int] | None], Framed] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def frame(self, text: str, params: tuple[int, int] | None) -> Framed:
        """`params` (window bits, memory level) for a connection with shared deflate, else None (plain)."""
        key = (text, params)  # a str caches its hash: a lookup by the frame every viewer shares is cheap
        done = self._cache.get(key)
        if done is not None:
            self.hits += 1
            self._cache.move_to_end(key)
            return done
        self.misses += 1
        payload = text.encode()
        compressed = params is not None and len(payload) >= MIN_COMPRESS_BYTES
        body = deflate_message(payload, *params, self.level) if compressed and params is not None else payload
        done = Framed(frame_header(1, len(body), compressed=compressed) + body, len(payload), len(body))
        self._cache[key] = done
        if len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return done

    def clear(self) -> None:
        self._cache.clear()


shared_frames = SharedFrames()


def shared_compressor(protocol: Any) -> tuple[int, int] | None:
    """(window bits, memory level) when `protocol`'s messages may use the shared cache, else None."""
    pmc = getattr(protocol, "_perMessageCompress", None)
    if pmc is None or not getattr(pmc, "server_no_context_takeover", False):
        return None
    return pmc.server_max_window_bits, pmc.mem_level
