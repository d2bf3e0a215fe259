"""The converted key: a zkey's points and coefficients in this engine's forms, stored once.

Registration parses the zkey (every point checked) and writes this file next to it, so no
proof ever parses or converts a zkey again. The file is the engine's one key container
(`groth16/keyfile.py`: magic, JSON header, blobs, sha256 trailer); the blobs are points as
arkworks affine big-endian x||y and coefficients as u32 row, u32 signal, 32-byte big-endian
value. Points are read back without curve checks: the checksum proves they are the bytes
written after the checked conversion.
"""
from __future__ import annotations

import struct
import threading
from pathlib import Path

from py_arkworks_bls12381 import G1Point, G2Point

from gpu_engine.circom.prover import CircuitKey
from gpu_engine.circom.zkey import Zkey
from gpu_engine.groth16.keyfile import KeyFileError, pack, unpack, write_atomic
from gpu_engine.groth16.keys import VerifyingKey
from gpu_engine.groth16.points import g1_from_bytes_unchecked, g2_from_bytes_unchecked

MAGIC = b"VMCIRC\x01\x00"
FORMAT = 1
G1_LEN, G2_LEN, COEF_LEN = 96, 192, 40
_G1_VECTORS = ("ic", "a_g1", "b_g1", "c_g1", "h_g1")


class KeyCacheError(KeyFileError):
    """A converted key that must not be used (corrupt, truncated, or for another zkey)."""


def _coef_blob(coeffs: list[tuple[int, int, int]]) -> bytes:
    return b"".join(struct.pack("<II", row, sig) + v.to_bytes(32, "big") for row, sig, v in coeffs)


def dump_key(zkey: Zkey, zkey_sha256: str) -> bytes:
    h = zkey.header
    vectors = {"ic": zkey.ic, "a_g1": zkey.a_g1, "b_g1": zkey.b_g1, "c_g1": zkey.c_g1, "h_g1": zkey.h_g1}
    header = {
        "format": FORMAT, "zkey_sha256": zkey_sha256, "num_vars": h.num_vars, "num_public": h.num_public,
        "domain_size": h.domain_size, "num_constraints": h.num_constraints,
        "counts": {**{k: len(v) for k, v in vectors.items()}, "b_g2": len(zkey.b_g2),
                   "a_coeffs": len(zkey.a_coeffs), "b_coeffs": len(zkey.b_coeffs)},
    }
    parts = [p.to_xy_bytes_be() for p in (zkey.alpha_g1, zkey.beta_g1, zkey.delta_g1)]
    parts += [p.to_xy_bytes_be() for p in (zkey.beta_g2, zkey.gamma_g2, zkey.delta_g2)]
    for name in _G1_VECTORS:
        parts += [p.to_xy_bytes_be() for p in vectors[name]]
    parts += [p.to_xy_bytes_be() for p in zkey.b_g2]
    parts += [_coef_blob(zkey.a_coeffs), _coef_blob(zkey.b_coeffs)]
    return pack(MAGIC, header, parts)


def write_key(path: Path, data: bytes) -> None:
    """Atomically: a reader never sees half a key."""
    write_atomic(path, data)


def _coeffs(raw: memoryview, count: int) -> list[tuple[int, int, int]]:
    out = []
    for i in range(count):
        e = raw[i * COEF_LEN:(i + 1) * COEF_LEN]
        row, sig = struct.unpack_from("<II", e)
        out.append((row, sig, int.from_bytes(e[8:], "big")))
    return out


def load_key_bytes(raw: bytes, name: str, expected_zkey_sha256: str) -> CircuitKey:
    header, blobs = unpack(raw, MAGIC, what="converted circuit key", error=KeyCacheError, format_version=FORMAT)
    if header.get("zkey_sha256") != expected_zkey_sha256:
        raise KeyCacheError("the converted key belongs to another zkey")
    counts = header["counts"]
    take = blobs.take

    def g1s(count: int) -> list[G1Point]:
        blob = take(count * G1_LEN)
        return [g1_from_bytes_unchecked(bytes(blob[i * G1_LEN:(i + 1) * G1_LEN])) for i in range(count)]

    def g2s(count: int) -> list[G2Point]:
        blob = take(count * G2_LEN)
        return [g2_from_bytes_unchecked(bytes(blob[i * G2_LEN:(i + 1) * G2_LEN])) for i in range(count)]

    alpha1, beta1, delta1 = g1s(3)
    beta2, gamma2, delta2 = g2s(3)
    vec = {n: g1s(counts[n]) for n in _G1_VECTORS}
    b_g2 = g2s(counts["b_g2"])
    a_coeffs = _coeffs(take(counts["a_coeffs"] * COEF_LEN), counts["a_coeffs"])
    b_coeffs = _coeffs(take(counts["b_coeffs"] * COEF_LEN), counts["b_coeffs"])
    blobs.done()
    return CircuitKey(
        name=name, key_hash=expected_zkey_sha256, num_vars=header["num_vars"], num_public=header["num_public"],
        domain_size=header["domain_size"], num_constraints=header["num_constraints"],
        vk=VerifyingKey(alpha1, beta2, gamma2, delta2, vec["ic"]), beta_g1=beta1, delta_g1=delta1,
        a_g1=vec["a_g1"], b_g1=vec["b_g1"], b_g2=b_g2, c_g1=vec["c_g1"], h_g1=vec["h_g1"],
        a_coeffs=a_coeffs, b_coeffs=b_coeffs,
    )


_loaded: dict[tuple[str, str], CircuitKey] = {}
_lock = threading.Lock()


def load_key(path: Path | str, name: str, zkey_sha256: str) -> CircuitKey:
    """The converted key at `path`, kept in memory per (path, hash) for this process."""
    key = (str(path), zkey_sha256)
    with _lock:
        found = _loaded.get(key)
        if found is None:
            try:
                raw = Path(path).read_bytes()
            except OSError as exc:
                raise KeyCacheError(f"cannot read the converted key {path}: {exc.strerror}") from None
            found = _loaded[key] = load_key_bytes(raw, name, zkey_sha256)
        return found
