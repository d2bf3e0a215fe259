"""The one container of this engine's key files, and the one way any of them reaches the disk.

Both key files (the built-in kinds' parameters, `groth16/keys.py`; a circom circuit's converted
key, `circom/keycache.py`) are: MAGIC | u32 header length | JSON header | blobs | sha256 of all
before. `pack` writes that frame, `unpack` checks it (magic, checksum, header) and hands back the
header and a `Blobs` reader that refuses to run past the end or to stop short of it. Points in the
blobs are read back without curve checks: the checksum proves they are the bytes written.

`write_atomic` (temporary file, fsync, rename) is how every key, parameter and exported file is
written: a reader never sees half of one.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DIGEST_LEN = 32


class KeyFileError(ValueError):
    """A key file that must not be used (corrupt, truncated, foreign or stale)."""


def pack(magic: bytes, header: dict[str, Any], blobs: Iterable[bytes]) -> bytes:
    """The framed file: magic, the header as sorted JSON, the blobs, the sha256 trailer."""
    hb = json.dumps(header, sort_keys=True).encode()
    body = b"".join([magic, struct.pack("<I", len(hb)), hb, *blobs])
    return body + hashlib.sha256(body).digest()


class Blobs:
    """The blobs after the header, taken in order."""

    def __init__(self, body: memoryview, pos: int, error: type[KeyFileError], what: str) -> None:
        self._body, self.pos, self._error, self._what = body, pos, error, what

    @property
    def remaining(self) -> int:
        return len(self._body) - self.pos

    def take(self, size: int) -> memoryview:
        if self.pos + size > len(self._body):
            raise self._error(f"{self._what} is shorter than its header says")
        self.pos += size
        return self._body[self.pos - size:self.pos]

    def expect_size(self, size: int) -> None:
        """Check up front that exactly `size` bytes of blobs follow the header."""
        if self.remaining != size:
            raise self._error(f"body is {self.remaining} bytes, header implies {size}")

    def done(self) -> None:
        if self.remaining:
            raise self._error(f"{self._what} is longer than its header says")


def unpack(raw: bytes, magic: bytes, *, what: str, error: type[KeyFileError] = KeyFileError,
           format_version: int | None = None) -> tuple[dict[str, Any], Blobs]:
    """(header, blobs) of a framed file; `error` (with `what` naming the file's kind) says what is wrong."""
    if len(raw) < len(magic) + 4 + DIGEST_LEN or not raw.startswith(magic):
        raise error(f"not a {what} (bad magic or truncated)")
    body = memoryview(raw)[:-DIGEST_LEN]
    if hashlib.sha256(body).digest() != raw[-DIGEST_LEN:]:
        raise error(f"checksum mismatch (corrupt or truncated {what})")
    (hlen,) = struct.unpack_from("<I", body, len(magic))
    pos = len(magic) + 4
    try:
        header = json.loads(bytes(body[pos:pos + hlen]))
    except ValueError as exc:
        raise error(f"unreadable header: {exc}") from None
    if not isinstance(header, dict):
        raise error(f"unreadable header: not a JSON object in this {what}")
    if format_version is not None and header.get("format") != format_version:
        raise error(f"format {header.get('format')!r}, expected {format_version}")
    return header, Blobs(body, pos + hlen, error, what)


def write_atomic(path: Path | str, data: bytes | str) -> None:
    """Temporary file beside `path`, fsync, rename: a reader never sees half a file."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
