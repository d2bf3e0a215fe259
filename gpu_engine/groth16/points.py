"""Conversions between canonical ints, arkworks scalars and points, and affine coordinates.

arkworks' `to_xy_bytes_be` lays a G1 point out as x || y (48 bytes each) and a G2 point
as x.c0 || x.c1 || y.c0 || y.c1 (48 bytes each, Fp2 = c0 + c1*u), which is also the
order of the exchange bundle and of py_ecc's `FQ2([c0, c1])`. The point at infinity is
all zeros (the bundle writes it as zeros too).
"""
from __future__ import annotations

from collections.abc import Sequence

from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from gpu_engine.groth16.field import R

# The base field modulus q of BLS12-381 (coordinates live below it).
Q = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
FP_BYTES = 48


def to_scalar(x: int) -> Scalar:
    """An arkworks Scalar from any int (reduced mod r)."""
    return Scalar.from_le_bytes((x % R).to_bytes(32, "little"))


def scalars_to_arkworks(values: Sequence[int]) -> list[Scalar]:
    from_le = Scalar.from_le_bytes
    return [from_le((int(v) % R).to_bytes(32, "little")) for v in values]


def g1_to_ints(p: G1Point) -> tuple[int, int]:
    raw = p.to_xy_bytes_be()
    return int.from_bytes(raw[:48], "big"), int.from_bytes(raw[48:], "big")


def g2_to_ints(p: G2Point) -> tuple[tuple[int, int], tuple[int, int]]:
    raw = p.to_xy_bytes_be()
    c = [int.from_bytes(raw[i:i + 48], "big") for i in range(0, 192, 48)]
    return (c[0], c[1]), (c[2], c[3])


def _coord_bytes(values: Sequence[int]) -> bytes:
    out = b""
    for v in values:
        if not isinstance(v, int) or not 0 <= v < Q:
            raise ValueError(f"coordinate {v!r} is not an element of Fq")
        out += v.to_bytes(FP_BYTES, "big")
    return out


def g1_from_ints(x: int, y: int) -> G1Point:
    """Checked: raises ValueError unless (x, y) is on the curve and in the subgroup."""
    if x == 0 and y == 0:
        return G1Point.identity()
    try:
        return G1Point.from_xy_bytes_be(_coord_bytes((x, y)))
    except Exception as exc:  # noqa: BLE001 - arkworks raises its own exception types: all mean "no point"
        raise ValueError(f"({x}, {y}) is not a valid G1 point: {exc}") from None


def g2_from_ints(x: tuple[int, int], y: tuple[int, int]) -> G2Point:
    """Checked: raises ValueError unless the point is on the twist and in the subgroup."""
    coords = (x[0], x[1], y[0], y[1])
    if not any(coords):
        return G2Point.identity()
    try:
        return G2Point.from_xy_bytes_be(_coord_bytes(coords))
    except Exception as exc:  # noqa: BLE001 - arkworks raises its own exception types: all mean "no point"
        raise ValueError(f"{coords} is not a valid G2 point: {exc}") from None


def g1_to_bytes(p: G1Point) -> bytes:
    return p.to_xy_bytes_be()


def g2_to_bytes(p: G2Point) -> bytes:
    return p.to_xy_bytes_be()


def g1_from_bytes_unchecked(raw: bytes) -> G1Point:
    """For bytes we wrote ourselves and checksummed (no curve/subgroup check: fast)."""
    if not any(raw):
        return G1Point.identity()
    return G1Point.from_xy_bytes_unchecked_be(raw)


def g2_from_bytes_unchecked(raw: bytes) -> G2Point:
    if not any(raw):
        return G2Point.identity()
    return G2Point.from_xy_bytes_unchecked_be(raw)
