"""The CPU NTT family over Fr, fast enough for the proving sizes used on a CPU.

Measured on the 2-core dev machine (Fr NTT of 2^12): plain-int triple loop ~15 ms,
numpy object arrays ~14 ms, gmpy2 mpz with one list comprehension per butterfly
column ~11 ms, plus lazy reduction ~9 ms. So values are gmpy2 `mpz` while inside (plain ints when gmpy2 is
absent), and every stage works on whole slices: per twiddle with a stride while
blocks are many and short, per block while they are few and long. Twiddle tables
are cached per size. Results go back to canonical Python ints.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from gpu_engine.groth16.field import (
    COSET_GENERATOR,
    R,
    bit_reverse_permutation,
    check_domain_size,
    fr_inv,
    powers,
    root_of_unity,
    vanishing_on_coset_inverse,
)

try:  # gmpy2 roughly halves the cost of 255-bit products and reductions
    from gmpy2 import mpz as _num
    HAVE_GMPY2 = True
except ImportError:  # pragma: no cover - exercised only without gmpy2
    _num = int
    HAVE_GMPY2 = False

_P = _num(R)


@lru_cache(maxsize=64)
def _stage_twiddles(n: int, inverse: bool) -> tuple[tuple, ...]:
    """Per stage (m = 2, 4, ..., n): the m/2 twiddles w_m**k."""
    omega = root_of_unity(n)
    if inverse:
        omega = fr_inv(omega)
    stages = []
    m = 2
    while m <= n:
        stages.append(tuple(_num(t) for t in powers(pow(omega, n // m, R), m // 2)))
        m *= 2
    return tuple(stages)


@lru_cache(maxsize=64)
def _bitrev(n: int) -> tuple[int, ...]:
    return tuple(bit_reverse_permutation(n))


@lru_cache(maxsize=64)
def _coset_powers(n: int, inverse: bool) -> tuple:
    """g**j (or g**-j / n for the inverse, folding the 1/n scaling in)."""
    if inverse:
        return tuple(_num(x) for x in powers(fr_inv(COSET_GENERATOR), n, start=fr_inv(n)))
    return tuple(_num(x) for x in powers(COSET_GENERATOR, n))


@lru_cache(maxsize=64)
def _n_inv(n: int):
    return _num(fr_inv(n))


def _transform(a: list, n: int, inverse: bool) -> list:
    """Radix-2 DIT on a list of mpz; returns the transformed list, reduced.

    Reduction is lazy: only the twiddle product is reduced (so v < p), sums and
    differences (u - v + p >= 0) grow by at most p per stage, i.e. a few bits over
    log2(n) stages, and one pass reduces at the end. Two of three `%` per butterfly go."""
    p = _P
    rev = _bitrev(n)
    a = [a[i] for i in rev]
    m = 2
    for tw in _stage_twiddles(n, inverse):
        h = m // 2
        if h < n // m:
            for k in range(h):
                t = tw[k]
                us = a[k::m]
                vs = [x * t % p for x in a[k + h::m]]
                a[k::m] = [u + v for u, v in zip(us, vs)]
                a[k + h::m] = [u - v + p for u, v in zip(us, vs)]
        else:
            for s in range(0, n, m):
                us = a[s:s + h]
                vs = [x * t % p for x, t in zip(a[s + h:s + m], tw)]
                a[s:s + h] = [u + v for u, v in zip(us, vs)]
                a[s + h:s + m] = [u - v + p for u, v in zip(us, vs)]
        m *= 2
    return [x % p for x in a]


def _ntt_num(a: list, *, inverse: bool, coset: bool) -> list:
    """NTT on internal numbers (mpz); no conversion at either end."""
    n = len(a)
    p = _P
    if coset and not inverse:
        a = [x * s % p for x, s in zip(a, _coset_powers(n, False))]
    a = _transform(a, n, inverse)
    if inverse:
        if coset:
            a = [x * s % p for x, s in zip(a, _coset_powers(n, True))]
        else:
            ninv = _n_inv(n)
            a = [x * ninv % p for x in a]
    return a


def _to_num(values: Sequence[int]) -> list:
    p = _P
    return [_num(v) % p for v in values]


def ntt(values: Sequence[int], *, inverse: bool = False, coset: bool = False) -> list[int]:
    """Same result as `field.reference_ntt`, much faster."""
    n = len(values)
    check_domain_size(n)
    return [int(x) for x in _ntt_num(_to_num(values), inverse=inverse, coset=coset)]


def compute_h(a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
    """H = (A*B - C)/Z by the 7 NTTs (iNTT a, b, c; coset NTT each; divide; coset iNTT).

    Returns n coefficients; the top one is zero when the R1CS is satisfied."""
    n = len(a)
    check_domain_size(n)
    if not (len(b) == len(c) == n):
        raise ValueError(f"a, b, c must have the same length, got {len(a)}, {len(b)}, {len(c)}")
    ea, eb, ec = (
        _ntt_num(_ntt_num(_to_num(v), inverse=True, coset=False), inverse=False, coset=True)
        for v in (a, b, c)
    )
    p = _P
    z_inv = _num(vanishing_on_coset_inverse(n))
    eh = [(x * y - z) * z_inv % p for x, y, z in zip(ea, eb, ec)]
    return [int(x) for x in _ntt_num(eh, inverse=True, coset=True)]
