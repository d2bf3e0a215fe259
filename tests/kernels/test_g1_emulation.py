"""G1 point arithmetic of the CUDA kernels (host build, XYZZ) against py_ecc."""
from __future__ import annotations

import random

import pytest
from py_ecc import bls12_381 as ecc

from tests.kernels.emulation import affine_record, g1_op, random_z, to_xyzz

pytestmark = pytest.mark.emulation

RNG = random.Random(21)


def _ints(pt) -> tuple[int, int] | None:
    return None if pt is None else (int(pt[0].n), int(pt[1].n))


def _point(k: int):
    return ecc.multiply(ecc.G1, k)


P = _point(RNG.randrange(1, 2**64))
Q = _point(RNG.randrange(1, 2**64))
G = _ints(ecc.G1)


def test_add_of_distinct_points():
    for z1, z2 in ((1, 1), (random_z(RNG), random_z(RNG))):
        got = g1_op("add", to_xyzz(_ints(P), z1), to_xyzz(_ints(Q), z2))
        assert got == _ints(ecc.add(P, Q))


def test_add_of_equal_points_doubles():
    got = g1_op("add", to_xyzz(_ints(P), random_z(RNG)), to_xyzz(_ints(P), random_z(RNG)))
    assert got == _ints(ecc.double(P))


def test_add_of_opposite_points_is_infinity():
    assert g1_op("add", to_xyzz(_ints(P), random_z(RNG)), to_xyzz(_ints(ecc.neg(P)), random_z(RNG))) is None


def test_add_with_infinity_on_either_side():
    assert g1_op("add", to_xyzz(None), to_xyzz(_ints(P), 5)) == _ints(P)
    assert g1_op("add", to_xyzz(_ints(P), 5), to_xyzz(None)) == _ints(P)
    assert g1_op("add", to_xyzz(None), to_xyzz(None)) is None


def test_mixed_add_covers_every_case():
    z = random_z(RNG)
    assert g1_op("add_affine", to_xyzz(_ints(P), z), affine_record(_ints(Q))) == _ints(ecc.add(P, Q))
    assert g1_op("add_affine", to_xyzz(_ints(P), z), affine_record(_ints(P))) == _ints(ecc.double(P))
    assert g1_op("add_affine", to_xyzz(_ints(P), z), affine_record(_ints(ecc.neg(P)))) is None
    assert g1_op("add_affine", to_xyzz(None), affine_record(_ints(Q))) == _ints(Q)
    assert g1_op("add_affine", to_xyzz(_ints(P), z), affine_record(None)) == _ints(P)


def test_doubling_xyzz_and_affine():
    assert g1_op("dbl", to_xyzz(_ints(Q), random_z(RNG))) == _ints(ecc.double(Q))
    assert g1_op("dbl_affine", affine_record(_ints(Q))) == _ints(ecc.double(Q))
    assert g1_op("dbl", to_xyzz(None)) is None
    assert g1_op("dbl_affine", affine_record(None)) is None


def test_generator_sums_match_scalar_multiples():
    acc = to_xyzz(G)
    for k in range(2, 6):
        got = g1_op("add_affine", acc, affine_record(G))
        assert got == _ints(ecc.multiply(ecc.G1, k))
        acc = to_xyzz(got, random_z(RNG))


@pytest.mark.parametrize("k", [0, 1, 2, 3, 15, 16, 255, 65535])
def test_small_scalar_multiple(k):
    assert g1_op("mul_small", to_xyzz(_ints(P), random_z(RNG)), k=k) == _ints(ecc.multiply(P, k))
