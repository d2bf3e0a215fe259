"""snarkjs's H (odd coset, ffjavascript's roots): the fast CPU path equals the readable reference,
and the reference equals its definition (interpolate on the domain, evaluate at w_2n**(2i+1))."""
from __future__ import annotations

import random

import pytest

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16.field import (
    FFJS_ROOT_OF_UNITY,
    TWO_ADICITY,
    R,
    ffjs_root_of_unity,
    naive_dft,
    reference_h_odd_coset,
    reference_ntt,
    root_of_unity,
)


def _vec(rng: random.Random, n: int) -> list[int]:
    return [rng.randrange(R) for _ in range(n)]


def test_ffjs_root_is_primitive_and_differs_from_the_engines_root():
    assert pow(FFJS_ROOT_OF_UNITY, 1 << TWO_ADICITY, R) == 1
    assert pow(FFJS_ROOT_OF_UNITY, 1 << (TWO_ADICITY - 1), R) == R - 1
    assert ffjs_root_of_unity(1024) != root_of_unity(1024)
    assert pow(ffjs_root_of_unity(2048), 2, R) == ffjs_root_of_unity(1024)


def test_reference_is_the_odd_coset_evaluation():
    rng = random.Random(1)
    n = 8
    w, w2 = ffjs_root_of_unity(n), ffjs_root_of_unity(2 * n)
    a, b, c = _vec(rng, n), _vec(rng, n), _vec(rng, n)
    polys = [reference_ntt(v, inverse=True, omega=w) for v in (a, b, c)]
    assert naive_dft(polys[0], w) == a
    at = [naive_dft([coef * pow(w2, j, R) % R for j, coef in enumerate(p)], w) for p in polys]
    expected = [(x * y - z) % R for x, y, z in zip(*at)]
    assert reference_h_odd_coset(a, b, c) == expected
    # and that is the value at w_2n**(2i+1), point by point
    point = pow(w2, 3, R)
    assert at[0][1] == sum(coef * pow(point, j, R) for j, coef in enumerate(polys[0])) % R


@pytest.mark.parametrize("n", [1, 2, 4, 16, 256, 1024])
def test_cpu_backend_matches_reference(n: int):
    rng = random.Random(n)
    a, b, c = _vec(rng, n), _vec(rng, n), _vec(rng, n)
    assert CpuBackend().compute_h_odd_coset(a, b, c) == reference_h_odd_coset(a, b, c)


def test_satisfied_rows_do_not_make_h_zero_but_differ_from_the_engines_h():
    """No division by Z: h is a*b - c on the coset, not H's coefficients."""
    rng = random.Random(7)
    n = 16
    a, b = _vec(rng, n), _vec(rng, n)
    c = [x * y % R for x, y in zip(a, b)]
    h = CpuBackend().compute_h_odd_coset(a, b, c)
    assert any(h)
    assert h != CpuBackend().compute_h(a, b, c)


def test_lengths_checked():
    with pytest.raises(ValueError, match="same length"):
        CpuBackend().compute_h_odd_coset([1, 2], [1, 2], [1])
    with pytest.raises(ValueError, match="power of two"):
        CpuBackend().compute_h_odd_coset([1, 2, 3], [1, 2, 3], [1, 2, 3])
