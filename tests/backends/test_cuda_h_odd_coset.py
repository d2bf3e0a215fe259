"""snarkjs's H (odd coset, ffjavascript's roots) on a GPU against the CPU backend and the reference
(skipped without a device)."""
from __future__ import annotations

import random

import pytest

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16 import field
from tests.backends.helpers import requires_gpu

pytestmark = requires_gpu
RNG = random.Random(71)
CPU = CpuBackend()


def _vec(n: int) -> list[int]:
    return [RNG.randrange(field.R) for _ in range(n)]


@pytest.mark.parametrize("log_n", [0, 1, 6])
def test_small_sizes_match_reference(cuda, log_n):
    a, b, c = _vec(1 << log_n), _vec(1 << log_n), _vec(1 << log_n)
    assert cuda.compute_h_odd_coset(a, b, c) == field.reference_h_odd_coset(a, b, c)


@pytest.mark.parametrize("log_n", [10, 14, 16])
def test_matches_cpu_backend(cuda, log_n):
    a, b, c = _vec(1 << log_n), _vec(1 << log_n), _vec(1 << log_n)
    assert cuda.compute_h_odd_coset(a, b, c) == CPU.compute_h_odd_coset(a, b, c)


def test_engine_h_still_right_after_odd_coset(cuda):
    a, b, c = _vec(1 << 12), _vec(1 << 12), _vec(1 << 12)
    cuda.compute_h_odd_coset(a, b, c)
    assert cuda.compute_h(a, b, c) == CPU.compute_h(a, b, c)
