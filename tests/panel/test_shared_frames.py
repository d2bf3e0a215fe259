"""The shared framing of the stream's messages: valid RFC 6455 frames (deflated per RFC 7692 where the
connection shares deflate), built once per (text, parameters), whatever the payload length form."""
from __future__ import annotations

import struct
import zlib

import pytest

from vastmanager.wscompress import MIN_COMPRESS_BYTES, SharedFrames


def _parse(wire: bytes) -> tuple[int, bool, bytes]:
    """(opcode, RSV1, payload) of one unmasked, unfragmented frame; fails on anything else."""
    b0, b1 = wire[0], wire[1]
    assert b0 & 0x80, "FIN must be set"
    assert not b1 & 0x80, "a server frame is never masked"
    length, offset = b1 & 0x7F, 2
    if length == 126:
        (length,), offset = struct.unpack("!H", wire[2:4]), 4
        assert length > 125, "the shortest length form must be used"
    elif length == 127:
        (length,), offset = struct.unpack("!Q", wire[2:10]), 10
        assert length > 0xFFFF, "the shortest length form must be used"
    payload = wire[offset:]
    assert len(payload) == length
    return b0 & 0x0F, bool(b0 & 0x40), payload


def _inflate(body: bytes, window_bits: int) -> bytes:
    return zlib.decompressobj(-window_bits).decompress(body + b"\x00\x00\xff\xff")


@pytest.mark.parametrize("size", [5, 125, 126, 0xFFFF, 0x10000, 300_000])
def test_plain_frames_carry_the_text_in_every_length_form(size):
    text = ("x" * (size - 2)) + "\u00e9" if size > 2 else "x" * size  # one non-ASCII character: UTF-8
    framed = SharedFrames().frame(text, None)
    opcode, rsv1, payload = _parse(framed.wire)
    assert (opcode, rsv1) == (1, False)
    assert payload.decode() == text
    assert framed.text_bytes == framed.payload_bytes == len(text.encode())


@pytest.mark.parametrize("window_bits", [9, 15])
def test_deflated_frames_inflate_to_the_text(window_bits):
    text = '{"type":"snapshot","html":"' + "<div class=engine-body>row</div>" * 500 + '"}'
    framed = SharedFrames().frame(text, (window_bits, 8))
    opcode, rsv1, payload = _parse(framed.wire)
    assert (opcode, rsv1) == (1, True)
    assert _inflate(payload, window_bits).decode() == text
    assert framed.text_bytes == len(text) and framed.payload_bytes == len(payload) < len(text) / 5


def test_short_texts_are_sent_plain_on_a_deflate_connection():
    text = "p" * (MIN_COMPRESS_BYTES - 1)
    opcode, rsv1, payload = _parse(SharedFrames().frame(text, (15, 8)).wire)
    assert (opcode, rsv1, payload) == (1, False, text.encode())


def test_a_frame_is_built_once_per_text_and_parameters():
    frames = SharedFrames(size=2)
    text = "f" * 1000
    first = frames.frame(text, None)
    assert frames.frame(text, None) is first and frames.frame(text[:500] + text[500:], None) is first
    deflated = frames.frame(text, (15, 8))
    assert deflated is not first and (frames.hits, frames.misses) == (2, 2)
    frames.frame("other" * 100, None)  # the cache holds two: the oldest (plain) one goes
    assert frames.frame(text, None) is not first and frames.misses == 4
