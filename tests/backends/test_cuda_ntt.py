"""The NTT kernels on a GPU against the CPU backend (skipped without a device)."""
from __future__ import annotations

import random

import pytest

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16.field import R
from tests.backends.helpers import requires_gpu

pytestmark = requires_gpu
RNG = random.Random(61)
CPU = CpuBackend()


def _vec(n: int) -> list[int]:
    return [RNG.randrange(R) for _ in range(n)]


@pytest.mark.parametrize("log_n", [4, 8, 12])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("coset", [False, True])
def test_ntt_variants_match_cpu(cuda, log_n, inverse, coset):
    v = _vec(1 << log_n)
    assert cuda.ntt(v, inverse=inverse, coset=coset) == CPU.ntt(v, inverse=inverse, coset=coset)


@pytest.mark.parametrize("log_n", [14, 16, 18])
def test_large_forward_ntt_matches_cpu(cuda, log_n):
    v = _vec(1 << log_n)
    assert cuda.ntt(v) == CPU.ntt(v)


def test_round_trip_at_2_18(cuda):
    v = _vec(1 << 18)
    assert cuda.ntt(cuda.ntt(v, coset=True), inverse=True, coset=True) == v


@pytest.mark.parametrize("log_n", [1, 10, 16])
def test_compute_h_matches_cpu(cuda, log_n):
    a, b, c = _vec(1 << log_n), _vec(1 << log_n), _vec(1 << log_n)
    assert cuda.compute_h(a, b, c) == CPU.compute_h(a, b, c)


def test_repeated_sizes_reuse_buffers(cuda):
    v = _vec(1 << 10)
    first = cuda.ntt(v)
    buffers = dict(cuda.ops._buffers)
    assert cuda.ntt(v) == first
    assert all(cuda.ops._buffers[tag] is buf for tag, buf in buffers.items())
