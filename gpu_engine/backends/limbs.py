"""Encoding between Python values and the kernels' limb layout (8 or 12 little-endian u32).

Scalars cross the backend seam as canonical ints and points as arkworks G1Points; the
kernels work on fixed-width limbs in Montgomery form. Conversions into Montgomery form
happen on the device, so the host only packs and unpacks canonical bytes here.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from py_arkworks_bls12381 import G1Point

from gpu_engine.groth16 import field
from gpu_engine.groth16.field import R as R_MOD

# The coset generator, the 2-adic root and r come from the Groth16 field module, so the
# device evaluates on exactly the domain and coset of the CPU backend.
P_MOD = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
FR_LIMBS = 8
FP_LIMBS = 12
FR_R = pow(2, 32 * FR_LIMBS, R_MOD)  # Montgomery radix mod r
FP_R_INV = pow(2, -32 * FP_LIMBS, P_MOD)
MAX_LOG_N = 28  # 2^28 Fr elements = 8 GiB per buffer; larger is refused up front.


def root_of_unity(log_n: int) -> int:
    """The primitive 2^log_n-th root of unity: the CPU backend's domain, by construction."""
    return field.root_of_unity(1 << log_n)


def log2_exact(n: int) -> int:
    """log2(n) for a valid NTT size that also fits the device buffers; a clear error otherwise."""
    log_n = field.check_domain_size(n)
    if log_n > MAX_LOG_N:
        raise ValueError(f"NTT length 2^{log_n} exceeds the supported 2^{MAX_LOG_N}")
    return log_n


def to_mont_fr(x: int) -> int:
    return x * FR_R % R_MOD


def check_scalars(values: Sequence[int]) -> None:
    """Scalars must be canonical field elements: 0 <= x < r."""
    if values and (min(values) < 0 or max(values) >= R_MOD):
        raise ValueError("scalars must be canonical Fr elements (0 <= x < r)")


def pack_fr(values: Sequence[int]) -> np.ndarray:
    """Canonical ints -> uint32 array of shape (n * 8,), little-endian limbs."""
    check_scalars(values)
    raw = b"".join(int(v).to_bytes(32, "little") for v in values)
    return np.frombuffer(raw, dtype="<u4").copy()


def unpack_fr(limbs: np.ndarray) -> list[int]:
    raw = np.ascontiguousarray(limbs, dtype="<u4").tobytes()
    return [int.from_bytes(raw[i : i + 32], "little") for i in range(0, len(raw), 32)]


def pack_fr_mont(values: Sequence[int]) -> np.ndarray:
    """Small tables (powers, constants) converted to Montgomery form on the host."""
    return pack_fr([to_mont_fr(v % R_MOD) for v in values])


def pack_fp(values: Sequence[int]) -> np.ndarray:
    raw = b"".join(int(v).to_bytes(48, "little") for v in values)
    return np.frombuffer(raw, dtype="<u4").copy()


def unpack_fp(limbs: np.ndarray) -> list[int]:
    raw = np.ascontiguousarray(limbs, dtype="<u4").tobytes()
    return [int.from_bytes(raw[i : i + 48], "little") for i in range(0, len(raw), 48)]


def pack_g1_affine(points: Sequence[G1Point]) -> np.ndarray:
    """Affine (x, y) canonical limbs, 24 u32 per point; the identity encodes as (0, 0)."""
    raw = b"".join(p.to_xy_bytes_le() for p in points)
    return np.frombuffer(raw, dtype="<u4").copy()


def xyzz_mont_to_affine(limbs: np.ndarray) -> tuple[int, int] | None:
    """One XYZZ point in Montgomery form (48 u32) -> affine ints, None for infinity."""
    x, y, zz, zzz = (v * FP_R_INV % P_MOD for v in unpack_fp(limbs[:48]))
    if zz == 0:
        return None
    return x * pow(zz, -1, P_MOD) % P_MOD, y * pow(zzz, -1, P_MOD) % P_MOD


def g1_from_affine(xy: tuple[int, int] | None) -> G1Point:
    """Affine ints -> G1Point; rejects a point off the curve or outside the subgroup."""
    if xy is None:
        return G1Point.identity()
    x, y = xy
    return G1Point.from_xy_bytes_le(x.to_bytes(48, "little") + y.to_bytes(48, "little"))
