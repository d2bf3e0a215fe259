"""Device memory planned in bytes before anything is allocated: the preferred window when it fits the
worker's share, another one when that fits instead, a clear DeviceError when nothing does, cached
bases evicted by bytes, and index arithmetic past 2^32 refused up front."""
from __future__ import annotations

import random

import pytest

from gpu_engine.backends import DeviceError
from gpu_engine.backends.device_plan import MsmPlan
from gpu_engine.backends.emulation import HostOps
from gpu_engine.backends.memory import GIB, MsmLayout, plan_msm, window_bits
from gpu_engine.groth16.field import R
from tests.backends.helpers import expected_msm, random_points

RNG = random.Random(94)
FILECOIN = 1 << 27


class CountingOps(HostOps):
    """HostOps that records every buffer it allocates."""

    def __init__(self) -> None:
        super().__init__()
        self.allocated: list[tuple[str, int]] = []

    def buffer(self, tag: str, nbytes: int):
        self.allocated.append((tag, nbytes))
        return super().buffer(tag, nbytes)


def test_filecoin_size_is_sized_in_bytes():
    lay = MsmLayout(FILECOIN, window_bits(FILECOIN))
    assert lay.c == 16 and 20 * GIB < lay.bytes < 40 * GIB
    assert plan_msm(FILECOIN, 70 * GIB, bases_bytes=FILECOIN * 96).c == 16  # an H200 shared by two workers


def test_a_smaller_share_takes_another_window():
    n = 1 << 20
    preferred = MsmLayout(n, window_bits(n))
    budget = preferred.bytes - 1 + n * 96
    lay = plan_msm(n, budget, bases_bytes=n * 96)
    assert lay.c < preferred.c and lay.bytes + n * 96 <= budget
    assert plan_msm(n, None).c == preferred.c  # no budget (the host emulation): the preferred window


def test_nothing_fits_is_a_clear_out_of_memory():
    with pytest.raises(DeviceError, match=r"an MSM of 134217728 points needs \d+\.\d\d GiB .* may use 8\.00 GiB") as info:
        plan_msm(FILECOIN, 8 * GIB, bases_bytes=FILECOIN * 96)
    assert info.value.out_of_memory


def test_index_overflow_is_refused_before_any_allocation():
    ops = CountingOps()
    plan = MsmPlan(ops)
    with pytest.raises(DeviceError, match=r"2\^32") as info:
        plan.plan(1 << 28)
    assert not info.value.out_of_memory and ops.allocated == []
    with pytest.raises(DeviceError, match=r"2\^32"):
        MsmLayout(1 << 28, 16).check_indices()
    MsmLayout((1 << 28) - 1, 16).check_indices()  # one point fewer fits


def test_cached_bases_are_evicted_by_bytes_least_recently_used_first():
    n = 64
    lay = MsmLayout(n, window_bits(n))
    budget = lay.bytes + 2 * n * 96 + n * 96 // 2  # room for the working set and two sets of bases
    plan = MsmPlan(HostOps(), budget=lambda: budget)
    pts = {k: random_points(n, RNG) for k in "abc"}
    sc = [RNG.randrange(R) for _ in range(n)]
    for key in ("a", "b", "a", "c"):
        assert plan.msm_g1(pts[key], sc, bases_key=key) == expected_msm(pts[key], sc)
    assert list(plan._bases) == ["a", "c"]  # b was the least recently used
    assert plan.cached_bytes() == 2 * n * 96


def test_ntt_sizes_are_checked_against_the_share():
    from gpu_engine.backends.device_plan import NttPlan

    plan = NttPlan(HostOps(), budget=lambda: 1024)
    with pytest.raises(DeviceError, match="H computation over 64 points needs"):
        plan.ntt([1] * 64)
