"""Hot buckets are split across threads: with a witness of mostly 0 and 1 (most circom circuits) one
digit holds most points; the MSM cuts every bucket into chunks, sums them in parallel and adds the
chunk sums by a tree, with the same result as one thread per bucket and as arkworks."""
from __future__ import annotations

import random

import pytest

from gpu_engine.backends.device_plan import bucket_work
from gpu_engine.backends.emulation import EmulatedBackend
from gpu_engine.backends.memory import MsmLayout
from gpu_engine.groth16.field import R
from tests.backends.helpers import expected_msm, random_points

pytestmark = pytest.mark.emulation

RNG = random.Random(93)


def zero_one_witness(n: int, rng: random.Random, full: int = 10) -> list[int]:
    """Half ones, the rest zeros but for `full` full-size values: the shape of circom witnesses."""
    out = [1] * (n // 2) + [0] * (n - n // 2 - full) + [rng.randrange(R) for _ in range(full)]
    rng.shuffle(out)
    return out


@pytest.fixture(scope="module")
def points():
    return random_points(512, RNG)


def test_zero_one_witness_matches_arkworks_split_and_unsplit(points):
    sc = zero_one_witness(len(points), RNG)
    split, plain = EmulatedBackend(), EmulatedBackend(split=False)
    assert split.msm_g1(points, sc) == expected_msm(points, sc) == plain.msm_g1(points, sc)
    assert "msm_chunk_sum_kernel" in split.ops.launches and "msm_bucket_kernel" not in split.ops.launches
    assert "msm_bucket_kernel" in plain.ops.launches and "msm_chunk_sum_kernel" not in plain.ops.launches
    lay = split._msm.last_layout
    assert lay.tree_levels >= 3 and split.ops.launches.count("msm_chunk_reduce_kernel") == lay.tree_levels


def test_largest_bucket_share_drops_after_splitting(points):
    emu = EmulatedBackend()
    emu.msm_g1(points, zero_one_witness(len(points), RNG))
    lay = emu._msm.last_layout
    work = bucket_work(emu._msm.bucket_counts(), lay.c, lay.log_chunk)
    # digit 1 of window 0 holds 256 points; the 10 full values add about 51 each over the windows
    assert work["largest_bucket_share"] >= 256 / work["additions"] > 0.25
    assert work["largest_chunk_share"] == (1 << lay.log_chunk) / work["additions"] < 0.05
    assert work["longest_chain"] <= (1 << lay.log_chunk) + lay.tree_levels


@pytest.mark.parametrize("n", [1, 31, 32, 33, 257])
def test_one_bucket_with_every_point(n):
    pts = random_points(n, RNG)
    emu = EmulatedBackend(window=5)
    assert emu.msm_g1(pts, [1] * n) == expected_msm(pts, [1] * n)
    assert emu.msm_g1(pts, [R - 1] * n) == expected_msm(pts, [R - 1] * n)


def test_random_scalars_still_match(points):
    sc = [RNG.randrange(R) for _ in points]
    assert EmulatedBackend(window=7).msm_g1(points, sc) == expected_msm(points, sc)


def test_slot_and_level_bounds_cover_the_worst_case():
    for n in (1, 2, 100, 1 << 12, 1 << 20, 1 << 27):
        for c in (4, 8, 16):
            lay = MsmLayout(n, c)
            biggest_chunks = -(-n >> lay.log_chunk)
            assert (1 << lay.tree_levels) >= biggest_chunks  # the tree reaches every chunk of a full bucket
            assert lay.nslots >= -(-lay.total >> lay.log_chunk) + lay.nbuckets - lay.nwin
