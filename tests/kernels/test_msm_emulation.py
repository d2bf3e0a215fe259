"""The Pippenger recipe (counting sort, buckets, running sums, combination) on the host
build of the kernels, against arkworks' MSM."""
from __future__ import annotations

import random

import pytest
from py_arkworks_bls12381 import G1Point, Scalar

from gpu_engine.backends.device_plan import window_bits
from gpu_engine.backends.emulation import EmulatedBackend
from gpu_engine.backends.limbs import R_MOD

pytestmark = pytest.mark.emulation

RNG = random.Random(41)


def _points(n: int) -> list[G1Point]:
    return [G1Point() * Scalar(RNG.randrange(1, R_MOD)) for _ in range(n)]


def _expected(points, scalars) -> G1Point:
    return G1Point.multiexp_unchecked(points, [Scalar(s) for s in scalars])


@pytest.mark.parametrize("n", [1, 2, 7, 16, 100])
def test_random_msm_matches_arkworks(emu, n):
    pts, sc = _points(n), [RNG.randrange(R_MOD) for _ in range(n)]
    assert emu.msm_g1(pts, sc) == _expected(pts, sc)


@pytest.mark.parametrize("window", [4, 5, 7, 8])
def test_window_widths_agree(window):
    emu = EmulatedBackend(window=window)
    pts, sc = _points(40), [RNG.randrange(R_MOD) for _ in range(40)]
    assert emu.msm_g1(pts, sc) == _expected(pts, sc)


def test_edge_scalars_and_points(emu):
    p = _points(3)
    pts = p + [p[0], -p[0], G1Point.identity(), p[1], p[1], p[2]]
    sc = [0, 1, R_MOD - 1, 5, 5, 9, 2**254, 2**254, 0]
    # same point twice in one bucket (P + P), P and -P cancelling, the identity as a base
    assert emu.msm_g1(pts, sc) == _expected(pts, sc)


def test_all_zero_scalars_give_identity(emu):
    assert emu.msm_g1(_points(5), [0] * 5) == G1Point.identity()
    assert emu.msm_g1([], []) == G1Point.identity()


def test_many_equal_scalars_share_a_bucket(emu):
    pts = _points(50)
    sc = [1] * 30 + [RNG.randrange(R_MOD) for _ in range(20)]
    assert emu.msm_g1(pts, sc) == _expected(pts, sc)


def test_bases_cached_by_key(emu):
    pts = _points(20)
    sc1 = [RNG.randrange(R_MOD) for _ in range(20)]
    sc2 = [RNG.randrange(R_MOD) for _ in range(20)]
    assert emu.msm_g1(pts, sc1, bases_key="shape/a") == _expected(pts, sc1)
    emu.ops.launches.clear()
    assert emu.msm_g1(pts, sc2, bases_key="shape/a") == _expected(pts, sc2)
    assert "fp_to_mont_kernel" not in emu.ops.launches  # bases were not uploaded again


def test_multi_level_scan_with_many_buckets():
    # 16-bit windows: 16 * 65536 buckets, so the exclusive scan recurses twice.
    emu = EmulatedBackend(window=16)
    pts, sc = _points(6), [RNG.randrange(R_MOD) for _ in range(6)]
    assert emu.msm_g1(pts, sc) == _expected(pts, sc)


def test_bad_input_is_refused(emu):
    with pytest.raises(ValueError, match="scalars"):
        emu.msm_g1(_points(2), [1])
    with pytest.raises(ValueError, match="canonical"):
        emu.msm_g1(_points(1), [R_MOD])


def test_window_width_grows_with_size():
    assert window_bits(16) == 4
    assert window_bits(1 << 12) == 8
    assert window_bits(1 << 20) == 16
    assert window_bits(1 << 26) == 16
