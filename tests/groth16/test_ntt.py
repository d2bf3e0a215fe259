"""The Fr NTT family: against a naive DFT, round trips, the coset, and the H identity."""
from __future__ import annotations

import random

import pytest

from gpu_engine.groth16 import field, ntt
from gpu_engine.groth16.field import COSET_GENERATOR, R


def _rand(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(R) for _ in range(n)]


def test_root_of_unity_has_exact_order():
    for n in (2, 8, 1 << 16):
        w = field.root_of_unity(n)
        assert pow(w, n, R) == 1
        assert pow(w, n // 2, R) == R - 1


def test_coset_generator_is_outside_every_two_adic_subgroup():
    assert pow(COSET_GENERATOR, 1 << field.TWO_ADICITY, R) != 1


@pytest.mark.parametrize("n", [1, 2, 4, 16, 64])
@pytest.mark.parametrize("impl", [field.reference_ntt, ntt.ntt])
def test_ntt_matches_naive_dft(n, impl):
    values = _rand(n, n)
    assert impl(values) == field.naive_dft(values, field.root_of_unity(n))


@pytest.mark.parametrize("impl", [field.reference_ntt, ntt.ntt])
def test_coset_ntt_evaluates_on_the_shifted_domain(impl):
    n = 32
    coeffs = _rand(n, 7)
    shifted = [c * pow(COSET_GENERATOR, j, R) % R for j, c in enumerate(coeffs)]
    assert impl(coeffs, coset=True) == field.naive_dft(shifted, field.root_of_unity(n))


@pytest.mark.parametrize("coset", [False, True])
def test_round_trip(coset):
    values = _rand(256, 3)
    forward = ntt.ntt(values, coset=coset)
    assert forward != values
    assert ntt.ntt(forward, inverse=True, coset=coset) == values


def test_fast_ntt_equals_reference_at_larger_size():
    values = _rand(1024, 11)
    for inverse in (False, True):
        for coset in (False, True):
            assert ntt.ntt(values, inverse=inverse, coset=coset) == field.reference_ntt(
                values, inverse=inverse, coset=coset
            )


def test_non_canonical_inputs_are_reduced():
    values = _rand(8, 5)
    assert ntt.ntt([v + R for v in values]) == ntt.ntt(values)


@pytest.mark.parametrize("bad", [0, 3, 12])
def test_bad_sizes_are_refused(bad):
    with pytest.raises(ValueError, match="power of two"):
        ntt.ntt([1] * bad)


def _eval_poly(coeffs: list[int], x: int) -> int:
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % R
    return acc


@pytest.mark.parametrize("impl", [field.reference_compute_h, ntt.compute_h])
def test_h_times_z_equals_ab_minus_c_at_a_random_point(impl):
    n = 64
    a, b = _rand(n, 1), _rand(n, 2)
    c = [x * y % R for x, y in zip(a, b)]  # a satisfied system: a*b = c on the domain
    h = impl(a, b, c)
    assert h[-1] == 0  # deg H <= n - 2
    pa, pb, pc = (ntt.ntt(v, inverse=True) for v in (a, b, c))
    x = random.Random(99).randrange(R)
    z = (pow(x, n, R) - 1) % R
    lhs = _eval_poly(h, x) * z % R
    rhs = (_eval_poly(pa, x) * _eval_poly(pb, x) - _eval_poly(pc, x)) % R
    assert lhs == rhs


def test_h_of_an_unsatisfied_system_is_not_a_polynomial_quotient():
    n = 16
    a, b = _rand(n, 1), _rand(n, 2)
    c = [x * y % R for x, y in zip(a, b)]
    c[3] = (c[3] + 1) % R
    h = ntt.compute_h(a, b, c)
    assert h[-1] != 0  # the division by Z left a remainder


def test_batch_inverse():
    values = _rand(50, 4)
    assert field.batch_inverse(values) == [pow(v, -1, R) for v in values]
    with pytest.raises(ZeroDivisionError):
        field.batch_inverse([1, 0])
