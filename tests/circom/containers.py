"""Taking iden3 container files apart and putting them back together, for the reader fuzz tests."""
from __future__ import annotations

import struct


def split(raw: bytes) -> tuple[bytes, list[tuple[int, bytes]]]:
    """(magic + version, [(section type, body)]) in file order."""
    head = raw[:8]
    (count,) = struct.unpack_from("<I", raw, 8)
    pos, sections = 12, []
    for _ in range(count):
        stype, size = struct.unpack_from("<IQ", raw, pos)
        pos += 12
        sections.append((stype, raw[pos:pos + size]))
        pos += size
    assert pos == len(raw)
    return head, sections


def join(head: bytes, sections: list[tuple[int, bytes]]) -> bytes:
    out = head + struct.pack("<I", len(sections))
    for stype, body in sections:
        out += struct.pack("<IQ", stype, len(body)) + body
    return out


def replace(raw: bytes, stype: int, body: bytes) -> bytes:
    head, sections = split(raw)
    return join(head, [(t, body if t == stype else b) for t, b in sections])
