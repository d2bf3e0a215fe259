"""The emulation refuses launches a GPU would run wrongly: a grid short of (or past) the guarded range,
the scan kernels off their 1024-thread block, arguments of the wrong kind. Planted in real recipes."""
from __future__ import annotations

import random

import numpy as np
import pytest

from gpu_engine.backends import launch
from gpu_engine.backends.cuda import MODULES, kernel_names
from gpu_engine.backends.device_plan import MsmPlan, NttPlan
from gpu_engine.backends.emulation import HostOps
from gpu_engine.groth16 import field

pytestmark = pytest.mark.emulation

RNG = random.Random(91)


def _vec(n: int) -> list[int]:
    return [RNG.randrange(field.R) for _ in range(n)]


def test_every_kernel_has_a_signature_and_a_guarded_range():
    sigs = launch.signatures()
    names = {k for m in MODULES for k in kernel_names(m)}
    assert names == set(sigs)
    for name, sig in sigs.items():
        assert sig.single_thread or sig.range_param is not None, f"{name}: no guard found"
        assert sig.single_thread or sig.params[sig.range_param][0] == "uint32_t"


def test_a_grid_one_block_short_is_refused(monkeypatch):
    real = launch.geometry
    monkeypatch.setattr(launch, "geometry", lambda name, count, block=None: (
        max(1, real(name, count, block)[0] - 1), real(name, count, block)[1]))
    with pytest.raises(launch.LaunchError, match="fr_to_mont_kernel: a grid of 3 blocks of 256 for n=1024; it needs exactly 4"):
        NttPlan(HostOps()).ntt(_vec(1024))


def test_a_recipe_launching_half_the_range_is_refused():
    ops = HostOps()
    buf = ops.buffer("x", 600 * 32)
    with pytest.raises(launch.LaunchError, match="fr_to_mont_kernel: .*n=600"):
        ops.launch("fr_to_mont_kernel", 300, buf, 600)
    with pytest.raises(launch.LaunchError, match="needs exactly 3"):
        ops.launch("fr_to_mont_kernel", 6000, buf, 600)  # too many blocks is as wrong


def test_the_scan_needs_its_fixed_block():
    ops = HostOps()
    data, sums = ops.buffer("d", 4096 * 4), ops.buffer("s", 4 * 4)
    with pytest.raises(launch.LaunchError, match="written for blocks of 1024 threads, launched with 256"):
        ops.launch("scan_block_kernel", 4096, data, sums, 4096, block=256)
    ops.launch("scan_block_kernel", 4096, data, sums, 4096)  # the kernel's own block by default


def test_argument_kinds_and_ranges_are_checked():
    ops = HostOps()
    buf = ops.buffer("x", 8 * 32)
    with pytest.raises(launch.LaunchError, match="must be an int or numpy.uint32, got int64"):
        ops.launch("fr_to_mont_kernel", 8, buf, np.int64(8))
    with pytest.raises(launch.LaunchError, match="does not fit in 32 bits"):
        ops.launch("fr_to_mont_kernel", 8, buf, 2**32)
    with pytest.raises(launch.LaunchError, match="must be a device buffer"):
        ops.launch("fr_to_mont_kernel", 8, 5, 8)
    with pytest.raises(launch.LaunchError, match="takes 2 arguments"):
        ops.launch("fr_to_mont_kernel", 8, buf)
    with pytest.raises(launch.LaunchError, match="no kernel named"):
        ops.launch("fr_nonexistent_kernel", 8, buf, 8)


def test_an_msm_with_a_wrong_grid_in_its_recipe_is_refused(monkeypatch):
    real = launch.geometry
    monkeypatch.setattr(launch, "geometry", lambda name, count, block=None: (
        real(name, count, block)[0] + (name == "msm_chunk_sum_kernel"), real(name, count, block)[1]))
    from tests.backends.helpers import random_points

    with pytest.raises(launch.LaunchError, match="msm_chunk_sum_kernel"):
        MsmPlan(HostOps()).msm_g1(random_points(300, RNG), _vec(300))
