"""Calls into the host build of the CUDA field and point code (see backends/emulation.py).

Values go in and come out as Python ints; Montgomery conversions are done here with
plain modular arithmetic, so the library is checked against an independent computation."""
from __future__ import annotations

import ctypes
import random
from collections.abc import Sequence

import numpy as np

from gpu_engine.backends import emulation, limbs
from gpu_engine.backends.limbs import P_MOD, R_MOD

FR_OPS = {"add": 0, "sub": 1, "mul": 2, "to_mont": 3, "from_mont": 4}
FP_R = pow(2, 384, P_MOD)
FR_R = pow(2, 256, R_MOD)

_lib: ctypes.CDLL | None = None


def lib() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        _lib = emulation.load_library()
    return _lib


def _ptr(arr: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(arr.ctypes.data)


def fr_op(op: str, a: Sequence[int], b: Sequence[int] | None = None) -> list[int]:
    """Raw limb operation over vectors (inputs and outputs as the kernel sees them)."""
    b = b if b is not None else [0] * len(a)
    pa, pb = limbs.pack_fr(a), limbs.pack_fr(b)
    out = np.zeros_like(pa)
    lib().vm_fr_op(FR_OPS[op], _ptr(pa), _ptr(pb), _ptr(out), ctypes.c_uint32(len(a)))
    return limbs.unpack_fr(out)


def fp_op(op: str, a: Sequence[int], b: Sequence[int] | None = None) -> list[int]:
    b = b if b is not None else [0] * len(a)
    pa, pb = limbs.pack_fp(a), limbs.pack_fp(b)
    out = np.zeros_like(pa)
    lib().vm_fp_op(FR_OPS[op], _ptr(pa), _ptr(pb), _ptr(out), ctypes.c_uint32(len(a)))
    return limbs.unpack_fp(out)


# ---- G1: points as affine int pairs (None = infinity), XYZZ records in Montgomery form ----

G1_OPS = {"add": 0, "add_affine": 1, "dbl": 2, "dbl_affine": 3, "mul_small": 4}


def to_xyzz(point: tuple[int, int] | None, z: int = 1) -> list[int]:
    """Affine -> XYZZ with a chosen Z (so ZZ != 1 is exercised), canonical ints."""
    if point is None:
        return [1, 1, 0, 0]
    x, y = point
    zz = z * z % P_MOD
    zzz = zz * z % P_MOD
    return [x * zz % P_MOD, y * zzz % P_MOD, zz, zzz]


def affine_record(point: tuple[int, int] | None) -> list[int]:
    """The (x, y) of an affine input; (0, 0) encodes infinity as in the kernels."""
    if point is None:
        return [0, 0, 0, 0]
    return [point[0], point[1], 0, 0]


def from_xyzz(coords: Sequence[int]) -> tuple[int, int] | None:
    x, y, zz, zzz = coords
    if zz == 0:
        return None
    assert pow(zz, 3, P_MOD) == pow(zzz, 2, P_MOD), "XYZZ invariant ZZ^3 = ZZZ^2 broken"
    return x * pow(zz, -1, P_MOD) % P_MOD, y * pow(zzz, -1, P_MOD) % P_MOD


def g1_op(op: str, p: Sequence[int], q: Sequence[int] | None = None, k: int = 0) -> tuple[int, int] | None:
    q = q if q is not None else [0, 0, 0, 0]
    pp = limbs.pack_fp([v * FP_R % P_MOD for v in p])
    pq = limbs.pack_fp([v * FP_R % P_MOD for v in q])
    out = np.zeros(48, dtype=np.uint32)
    lib().vm_g1_op(G1_OPS[op], _ptr(pp), _ptr(pq), ctypes.c_uint32(k), _ptr(out))
    return from_xyzz([v * pow(FP_R, -1, P_MOD) % P_MOD for v in limbs.unpack_fp(out)])


def random_z(rng: random.Random) -> int:
    return rng.randrange(2, P_MOD)
