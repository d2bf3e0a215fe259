"""Fr arithmetic of the CUDA kernels (host build) against Python ints."""
from __future__ import annotations

import random

import pytest

from gpu_engine.backends.limbs import R_MOD
from tests.kernels.emulation import FR_R, fr_op

pytestmark = pytest.mark.emulation

EDGE = [0, 1, 2, R_MOD - 1, R_MOD - 2, (R_MOD - 1) // 2, (R_MOD + 1) // 2, 2**128, 2**254, 2**32 - 1]


def _pairs(n: int = 300, seed: int = 1) -> tuple[list[int], list[int]]:
    rng = random.Random(seed)
    a = EDGE + [rng.randrange(R_MOD) for _ in range(n)]
    b = list(reversed(EDGE)) + [rng.randrange(R_MOD) for _ in range(n)]
    a += EDGE * len(EDGE)
    b += [e for e in EDGE for _ in EDGE]  # every edge value against every other
    return a, b


def test_add_matches_python_ints():
    a, b = _pairs()
    assert fr_op("add", a, b) == [(x + y) % R_MOD for x, y in zip(a, b)]


def test_sub_matches_python_ints():
    a, b = _pairs()
    assert fr_op("sub", a, b) == [(x - y) % R_MOD for x, y in zip(a, b)]


def test_montgomery_mul_is_a_b_over_r():
    a, b = _pairs()
    r_inv = pow(FR_R, -1, R_MOD)
    assert fr_op("mul", a, b) == [x * y * r_inv % R_MOD for x, y in zip(a, b)]


def test_mul_in_montgomery_form_matches_product():
    a, b = _pairs(seed=2)
    am, bm = fr_op("to_mont", a), fr_op("to_mont", b)
    assert am == [x * FR_R % R_MOD for x in a]
    assert fr_op("from_mont", fr_op("mul", am, bm)) == [x * y % R_MOD for x, y in zip(a, b)]


def test_montgomery_round_trip_is_identity():
    a, _ = _pairs(seed=3)
    assert fr_op("from_mont", fr_op("to_mont", a)) == a
