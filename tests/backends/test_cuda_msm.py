"""The Pippenger kernels on a GPU against arkworks (skipped without a device)."""
from __future__ import annotations

import random

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point

from gpu_engine.backends.device_plan import MsmPlan
from gpu_engine.groth16.field import R
from tests.backends.helpers import expected_msm, random_points, requires_gpu

pytestmark = requires_gpu
RNG = random.Random(71)


@pytest.mark.parametrize("log_n", [4, 8, 12, 16])
def test_random_msm_matches_arkworks(cuda, log_n):
    n = 1 << log_n
    pts, sc = random_points(n, RNG), [RNG.randrange(R) for _ in range(n)]
    assert cuda.msm_g1(pts, sc) == expected_msm(pts, sc)


def test_edge_cases(cuda):
    p = random_points(3, RNG)
    pts = p + [p[0], -p[0], G1Point.identity(), p[1], p[1], p[2]]
    sc = [0, 1, R - 1, 5, 5, 9, 2**254, 2**254, 0]
    assert cuda.msm_g1(pts, sc) == expected_msm(pts, sc)
    assert cuda.msm_g1(p, [0, 0, 0]) == G1Point.identity()
    assert cuda.msm_g1([], []) == G1Point.identity()


def test_skewed_scalars(cuda):
    pts = random_points(1 << 12, RNG)
    sc = [1] * (1 << 11) + [RNG.randrange(R) for _ in range(1 << 11)]
    assert cuda.msm_g1(pts, sc) == expected_msm(pts, sc)


def test_cached_bases_are_reused(cuda):
    pts = random_points(1 << 10, RNG)
    for _ in range(2):
        sc = [RNG.randrange(R) for _ in range(len(pts))]
        assert cuda.msm_g1(pts, sc, bases_key="test/cached") == expected_msm(pts, sc)
    assert "test/cached" in cuda._msm._bases


def test_device_scan_matches_numpy(cuda):
    plan = MsmPlan(cuda.ops)
    for count in (5, 1024, 1025, 3 * 1024 * 1024 + 7):
        data = np.random.default_rng(count).integers(0, 50, size=count, dtype=np.uint32)
        buf = cuda.ops.buffer("test:scan", count * 4)
        cuda.ops.upload(buf, data)
        plan._scan(buf, count)
        got = cuda.ops.download(buf, count * 4)
        assert np.array_equal(got, np.concatenate(([0], np.cumsum(data)[:-1])).astype(np.uint32))
    cuda.ops.release("test:scan")


def test_msm_g2_runs_on_the_cpu(cuda):
    from py_arkworks_bls12381 import G2Point, Scalar

    pts = [G2Point() * Scalar(3), G2Point() * Scalar(5)]
    assert cuda.msm_g2(pts, [2, 7]) == G2Point() * Scalar(41)
