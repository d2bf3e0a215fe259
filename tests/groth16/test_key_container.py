"""One key-file container for both key files (the built-in kinds' parameters and a circuit's converted
key): the frame is written and checked in one place, every corruption is named, and the one atomic
writer never leaves half a file or a stray temporary behind."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from gpu_engine.groth16 import keyfile
from gpu_engine.groth16.keyfile import KeyFileError, pack, unpack, write_atomic

MAGIC = b"TESTKEY\x01"


def test_a_packed_file_unpacks_to_its_header_and_blobs():
    raw = pack(MAGIC, {"format": 1, "n": 2}, [b"ab", b"cde"])
    assert raw[-32:] == hashlib.sha256(raw[:-32]).digest()
    header, blobs = unpack(raw, MAGIC, what="test key", format_version=1)
    assert header == {"format": 1, "n": 2}
    blobs.expect_size(5)
    assert bytes(blobs.take(2)) == b"ab" and bytes(blobs.take(3)) == b"cde"
    blobs.done()


@pytest.mark.parametrize("mangle, message", [
    (lambda raw: b"OTHERKEY" + raw[8:], "not a test key (bad magic or truncated)"),
    (lambda raw: raw[:-1], "checksum mismatch (corrupt or truncated test key)"),
    (lambda raw: raw[:-40] + bytes([raw[-40] ^ 1]) + raw[-39:], "checksum mismatch (corrupt or truncated test key)"),
])
def test_corruption_is_named(mangle, message):
    raw = pack(MAGIC, {"format": 1}, [b"x" * 64])
    with pytest.raises(KeyFileError) as err:
        unpack(mangle(raw), MAGIC, what="test key")
    assert str(err.value) == message


def test_wrong_format_and_short_or_long_bodies_are_refused():
    raw = pack(MAGIC, {"format": 2}, [b"x" * 8])
    with pytest.raises(KeyFileError, match="format 2, expected 1"):
        unpack(raw, MAGIC, what="test key", format_version=1)
    _, blobs = unpack(raw, MAGIC, what="test key")
    with pytest.raises(KeyFileError, match="header implies 9"):
        blobs.expect_size(9)
    with pytest.raises(KeyFileError, match="shorter than its header says"):
        blobs.take(9)
    blobs.take(4)
    with pytest.raises(KeyFileError, match="longer than its header says"):
        blobs.done()


def test_both_key_files_are_this_container():
    """The parameter file and the converted circuit key parse with the one `unpack` (their errors are
    its errors)."""
    from gpu_engine.circom import keycache
    from gpu_engine.groth16 import keys

    assert issubclass(keys.ParamsFileError, KeyFileError) and issubclass(keycache.KeyCacheError, KeyFileError)
    for magic, error in ((keys.MAGIC, keys.ParamsFileError), (keycache.MAGIC, keycache.KeyCacheError)):
        header, _ = unpack(pack(magic, {"format": 1}, []), magic, what="key", error=error)
        assert header == {"format": 1}
    with pytest.raises(keys.ParamsFileError, match="not a parameter file"):
        keys.load_params_bytes(b"junk" * 20, "shape")
    with pytest.raises(keycache.KeyCacheError, match="not a converted circuit key"):
        keycache.load_key_bytes(b"junk" * 20, "c", "hash")


def test_write_atomic_replaces_whole_and_leaves_no_temporary(tmp_path: Path, monkeypatch):
    target = tmp_path / "key.bin"
    write_atomic(target, b"first")
    write_atomic(target, "second")
    assert target.read_bytes() == b"second"

    def failing_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(keyfile.os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        write_atomic(target, b"third")
    assert target.read_bytes() == b"second"
    assert sorted(os.listdir(tmp_path)) == ["key.bin"]
