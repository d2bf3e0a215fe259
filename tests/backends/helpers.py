"""Plain helpers of the GPU tests (the backend itself is the `cuda` fixture): the skip marks, inputs."""
from __future__ import annotations

import random

import pytest
from py_arkworks_bls12381 import G1Point, Scalar

from gpu_engine import backends
from gpu_engine.groth16.field import R

NO_GPU_REASON = backends.cuda_unavailable_reason()
requires_gpu = [
    pytest.mark.gpu,
    pytest.mark.skipif(NO_GPU_REASON is not None, reason=f"no CUDA device: {NO_GPU_REASON}"),
]


def random_points(n: int, rng: random.Random) -> list[G1Point]:
    """n distinct points a + i*d: one scalar multiplication each would take minutes at 2^16."""
    a = G1Point() * Scalar(rng.randrange(1, R))
    d = G1Point() * Scalar(rng.randrange(1, R))
    out = []
    for _ in range(n):
        out.append(a)
        a = a + d
    return out


def expected_msm(points, scalars) -> G1Point:
    return G1Point.multiexp_unchecked(list(points), [Scalar(s) for s in scalars])
