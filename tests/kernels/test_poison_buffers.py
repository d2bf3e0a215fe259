"""New emulation buffers hold garbage, as device memory does: a recipe that relies on zeroed memory
fails here (planted: the MSM's bucket counts left unzeroed), where a zero-filled emulation passed."""
from __future__ import annotations

import random

import numpy as np
import pytest

from gpu_engine.backends.device_plan import MsmPlan
from gpu_engine.backends.emulation import POISON, EmulatedFault, HostOps
from gpu_engine.groth16.field import R
from tests.backends.helpers import expected_msm, random_points

pytestmark = pytest.mark.emulation

RNG = random.Random(92)


class SkipsZeroingCounts(HostOps):
    """The planted bug: the recipe's zeroing of the bucket counts does nothing."""

    def zero(self, buf: np.ndarray, nbytes: int) -> None:
        if buf is not self._buffers.get("msm:counts"):
            super().zero(buf, nbytes)


def test_new_buffers_are_poisoned():
    buf = HostOps().buffer("x", 64)
    assert buf.size == 16 and np.all(buf == POISON)


def test_reliance_on_zeroed_counts_is_caught():
    pts, sc = random_points(64, RNG), [RNG.randrange(R) for _ in range(64)]
    with pytest.raises(EmulatedFault, match="msm_scatter_kernel: .* out of range"):
        MsmPlan(SkipsZeroingCounts()).msm_g1(pts, sc)


def test_a_zero_filled_emulation_would_have_missed_it():
    pts, sc = random_points(64, RNG), [RNG.randrange(R) for _ in range(64)]
    assert MsmPlan(SkipsZeroingCounts(fill=0)).msm_g1(pts, sc) == expected_msm(pts, sc)


def test_the_real_recipes_run_on_poisoned_buffers(emu):
    assert emu.ops.fill == POISON
    pts, sc = random_points(33, RNG), [RNG.randrange(R) for _ in range(33)]
    assert emu.msm_g1(pts, sc) == expected_msm(pts, sc)
    v = [RNG.randrange(R) for _ in range(64)]
    assert emu.ntt(emu.ntt(v, coset=True), inverse=True, coset=True) == v
