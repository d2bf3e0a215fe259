"""CpuBackend implements the Backend protocol with correct results."""
from __future__ import annotations

import random

import pytest
from py_arkworks_bls12381 import G1Point, G2Point

from gpu_engine.backends.base import Backend
from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16 import field
from gpu_engine.groth16.field import R
from gpu_engine.groth16.points import to_scalar


def test_is_a_backend():
    backend = CpuBackend()
    assert isinstance(backend, Backend)
    assert backend.name == "cpu"


def test_ntt_and_compute_h_match_the_reference():
    rng = random.Random(1)
    backend = CpuBackend()
    vals = [rng.randrange(R) for _ in range(32)]
    assert backend.ntt(vals, coset=True) == field.reference_ntt(vals, coset=True)
    a, b, c = ([rng.randrange(R) for _ in range(32)] for _ in range(3))
    assert backend.compute_h(a, b, c) == field.reference_compute_h(a, b, c)


@pytest.mark.parametrize("group", [G1Point, G2Point])
def test_msm_equals_sum_of_scalar_multiplications(group):
    rng = random.Random(2)
    points = [group() * to_scalar(rng.randrange(R)) for _ in range(20)]
    scalars = [rng.randrange(R) for _ in range(20)]
    scalars[3] = 0
    expected = group.identity()
    for p, s in zip(points, scalars):
        expected = expected + p * to_scalar(s)
    msm = CpuBackend().msm_g1 if group is G1Point else CpuBackend().msm_g2
    assert msm(points, scalars) == expected


def test_msm_of_nothing_is_the_identity():
    assert CpuBackend().msm_g1([], []) == G1Point.identity()


def test_msm_length_mismatch_is_refused():
    with pytest.raises(ValueError, match="as many scalars"):
        CpuBackend().msm_g1([G1Point()], [1, 2])
