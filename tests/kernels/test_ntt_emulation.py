"""The device NTT recipes run on the host build of the kernels, against the Python
reference and the CPU backend (same domain, coset generator and ordering)."""
from __future__ import annotations

import random

import pytest

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16 import field

pytestmark = pytest.mark.emulation

RNG = random.Random(31)
CPU = CpuBackend()


def _vec(n: int) -> list[int]:
    return [RNG.randrange(field.R) for _ in range(n)]


@pytest.mark.parametrize("log_n", [0, 1, 2, 3, 5, 7])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("coset", [False, True])
def test_ntt_matches_reference(emu, log_n, inverse, coset):
    v = _vec(1 << log_n)
    assert emu.ntt(v, inverse=inverse, coset=coset) == field.reference_ntt(v, inverse=inverse, coset=coset)


@pytest.mark.parametrize("coset", [False, True])
def test_ntt_round_trip(emu, coset):
    v = _vec(256)
    assert emu.ntt(emu.ntt(v, coset=coset), inverse=True, coset=coset) == v


def test_ntt_agrees_with_cpu_backend(emu):
    v = _vec(512)
    for inverse in (False, True):
        for coset in (False, True):
            assert emu.ntt(v, inverse=inverse, coset=coset) == CPU.ntt(v, inverse=inverse, coset=coset)


def test_ntt_uses_the_shared_butterfly(emu):
    emu.ops.launches.clear()
    emu.ntt(_vec(16))
    assert emu.ops.launches.count("ntt_butterfly_kernel") == 4
    assert "ntt_bitrev_kernel" in emu.ops.launches


def test_compute_h_matches_cpu_backend(emu):
    for log_n in (2, 6):
        a, b, c = _vec(1 << log_n), _vec(1 << log_n), _vec(1 << log_n)
        assert emu.compute_h(a, b, c) == CPU.compute_h(a, b, c)


def test_compute_h_of_a_satisfied_system_has_zero_top_coefficient(emu):
    a, b = _vec(64), _vec(64)
    c = [x * y % field.R for x, y in zip(a, b)]  # A*B - C vanishes on the domain
    h = emu.compute_h(a, b, c)
    assert h[-1] == 0 and any(h)  # deg H = deg(AB - C) - n <= n - 2
    assert h == CPU.compute_h(a, b, c)


def test_bad_lengths_and_values_are_refused(emu):
    with pytest.raises(ValueError, match="power of two"):
        emu.ntt(_vec(12))
    with pytest.raises(ValueError, match="canonical"):
        emu.ntt([field.R] + _vec(7))
    with pytest.raises(ValueError, match="equal lengths"):
        emu.compute_h(_vec(8), _vec(8), _vec(4))
