"""snarkjs's H on the device recipe (six NTTs with ffjavascript's roots, the odd-coset scale, a*b - c)
run on the host build of the kernels, against the Python reference and the CPU backend."""
from __future__ import annotations

import random

import pytest

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.backends.device_plan import FFJS_ROOTS, NttPlan
from gpu_engine.groth16 import field

pytestmark = pytest.mark.emulation

RNG = random.Random(61)
CPU = CpuBackend()


def _vec(n: int) -> list[int]:
    return [RNG.randrange(field.R) for _ in range(n)]


@pytest.mark.parametrize("log_n", [0, 1, 2, 3, 5, 8])
def test_odd_coset_h_matches_reference(emu, log_n):
    a, b, c = _vec(1 << log_n), _vec(1 << log_n), _vec(1 << log_n)
    assert emu.compute_h_odd_coset(a, b, c) == field.reference_h_odd_coset(a, b, c)


def test_odd_coset_h_agrees_with_cpu_backend(emu):
    a, b, c = _vec(512), _vec(512), _vec(512)
    assert emu.compute_h_odd_coset(a, b, c) == CPU.compute_h_odd_coset(a, b, c)


def test_satisfied_rows_give_the_odd_coset_values_not_zero(emu):
    """With c = a*b on the domain, h is (AB - C) on the coset: not zero, and not the engine's H."""
    a, b = _vec(64), _vec(64)
    c = [x * y % field.R for x, y in zip(a, b)]
    h = emu.compute_h_odd_coset(a, b, c)
    assert h == field.reference_h_odd_coset(a, b, c) and any(h)
    assert h != emu.compute_h(a, b, c)


@pytest.mark.parametrize("inverse", [False, True])
def test_ntt_with_ffjavascripts_roots(emu, inverse):
    v = _vec(128)
    omega = field.ffjs_root_of_unity(128)
    assert emu._ntt.ntt(v, inverse=inverse, roots=FFJS_ROOTS) == field.reference_ntt(v, inverse=inverse, omega=omega)
    assert field.ffjs_root_of_unity(128) != field.root_of_unity(128)  # the two tables really differ


def test_six_transforms_and_the_pointwise_kernel(emu):
    emu.ops.launches.clear()
    emu.compute_h_odd_coset(_vec(16), _vec(16), _vec(16))
    launches = emu.ops.launches
    assert launches.count("ntt_butterfly_kernel") == 6 * 4
    assert launches.count("ntt_bitrev_kernel") == 6
    assert launches.count("ntt_h_odd_pointwise_kernel") == 1
    assert "ntt_h_pointwise_kernel" not in launches  # no division by Z
    emu.ops.launches.clear()
    emu.compute_h_odd_coset(_vec(16), _vec(16), _vec(16))
    assert "fr_powers_kernel" not in emu.ops.launches  # twiddle and scale tables are cached per size


def test_engine_and_ffjs_tables_do_not_collide(emu):
    """Same size, both roots, interleaved: each transform keeps its own twiddles."""
    v = _vec(32)
    first = emu.ntt(v)
    emu.compute_h_odd_coset(v, v, v)
    assert emu.ntt(v) == first == field.reference_ntt(v)


def test_bad_input_is_refused(emu):
    with pytest.raises(ValueError, match="equal lengths"):
        emu.compute_h_odd_coset(_vec(8), _vec(8), _vec(4))
    with pytest.raises(ValueError, match="power of two"):
        emu.compute_h_odd_coset(_vec(6), _vec(6), _vec(6))
    with pytest.raises(ValueError, match="canonical"):
        emu.compute_h_odd_coset([field.R] + _vec(3), _vec(4), _vec(4))
    with pytest.raises(ValueError, match="engine's roots"):
        NttPlan(emu.ops).ntt(_vec(4), coset=True, roots=FFJS_ROOTS)
