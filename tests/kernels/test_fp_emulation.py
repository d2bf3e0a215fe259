"""Fp (381-bit) arithmetic of the CUDA kernels (host build) against Python ints."""
from __future__ import annotations

import random

import pytest

from gpu_engine.backends.limbs import P_MOD
from tests.kernels.emulation import FP_R, fp_op

pytestmark = pytest.mark.emulation

EDGE = [0, 1, 2, P_MOD - 1, P_MOD - 2, (P_MOD - 1) // 2, 2**380, 2**192 - 1, 2**32]


def _pairs(n: int = 300, seed: int = 11) -> tuple[list[int], list[int]]:
    rng = random.Random(seed)
    a = [e for e in EDGE for _ in EDGE] + [rng.randrange(P_MOD) for _ in range(n)]
    b = EDGE * len(EDGE) + [rng.randrange(P_MOD) for _ in range(n)]
    return a, b


def test_add_and_sub_match_python_ints():
    a, b = _pairs()
    assert fp_op("add", a, b) == [(x + y) % P_MOD for x, y in zip(a, b)]
    assert fp_op("sub", a, b) == [(x - y) % P_MOD for x, y in zip(a, b)]


def test_montgomery_mul_matches_product():
    a, b = _pairs(seed=12)
    am, bm = fp_op("to_mont", a), fp_op("to_mont", b)
    assert am == [x * FP_R % P_MOD for x in a]
    assert fp_op("from_mont", fp_op("mul", am, bm)) == [x * y % P_MOD for x, y in zip(a, b)]


def test_montgomery_round_trip_is_identity():
    a, _ = _pairs(seed=13)
    assert fp_op("from_mont", fp_op("to_mont", a)) == a
