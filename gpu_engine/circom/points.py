"""snarkjs's point and scalar encodings to this engine's (arkworks points, canonical ints).

zkey points are affine x || y with every Fq coordinate 48 bytes little-endian in Montgomery form
(x * 2^384 mod q); a G2 coordinate is c0 || c1; the point at infinity is all zero bytes. Each
point is checked (on the curve, in the subgroup) when converted: registration converts a key
once, so the cost is paid once, and a corrupted point is refused with its section and index.
"""
from __future__ import annotations

from py_arkworks_bls12381 import G1Point, G2Point

from gpu_engine.circom.binfile import CircomFormatError, SectionReader
from gpu_engine.groth16.field import R
from gpu_engine.groth16.points import Q

FQ_BYTES, FR_BYTES = 48, 32
G1_BYTES, G2_BYTES = 2 * FQ_BYTES, 4 * FQ_BYTES
_FQ_MONT_INV = pow(1 << 384, -1, Q)
# zkey coefficients are stored as c * 2^512 mod r (Montgomery form applied twice).
_COEF_INV = pow(1 << 512, -1, R)


def coef_from_zkey(stored: int) -> int:
    return stored * _COEF_INV % R


def _coords(raw: memoryview, count: int, where: str, index: int) -> list[int]:
    out = []
    for k in range(count):
        m = int.from_bytes(raw[k * FQ_BYTES:(k + 1) * FQ_BYTES], "little")
        if m >= Q:
            raise CircomFormatError(f"{where}: point {index} has a coordinate outside Fq")
        out.append(m * _FQ_MONT_INV % Q)
    return out


def _be(values: list[int]) -> bytes:
    return b"".join(v.to_bytes(FQ_BYTES, "big") for v in values)


def g1_from_zkey(raw: memoryview, where: str, index: int) -> G1Point:
    if not any(raw):
        return G1Point.identity()
    coords = _coords(raw, 2, where, index)
    try:
        return G1Point.from_xy_bytes_be(_be(coords))
    except Exception:  # noqa: BLE001 - arkworks raises its own types
        raise CircomFormatError(f"{where}: point {index} is not on BLS12-381 G1 (or not in its subgroup)") from None


def g2_from_zkey(raw: memoryview, where: str, index: int) -> G2Point:
    if not any(raw):
        return G2Point.identity()
    coords = _coords(raw, 4, where, index)
    try:
        return G2Point.from_xy_bytes_be(_be(coords))
    except Exception:  # noqa: BLE001 - arkworks raises its own types
        raise CircomFormatError(f"{where}: point {index} is not on BLS12-381 G2 (or not in its subgroup)") from None


def read_g1(reader: SectionReader, index: int = 0) -> G1Point:
    return g1_from_zkey(reader.take(G1_BYTES), reader.where, index)


def read_g2(reader: SectionReader, index: int = 0) -> G2Point:
    return g2_from_zkey(reader.take(G2_BYTES), reader.where, index)


def read_g1_vector(reader: SectionReader, count: int, what: str) -> list[G1Point]:
    reader.expect_size(count * G1_BYTES, f"{count} G1 points ({what})")
    return [read_g1(reader, i) for i in range(count)]


def read_g2_vector(reader: SectionReader, count: int, what: str) -> list[G2Point]:
    reader.expect_size(count * G2_BYTES, f"{count} G2 points ({what})")
    return [read_g2(reader, i) for i in range(count)]
