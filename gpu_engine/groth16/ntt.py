"""The CPU NTT family over Fr: the public entry points on top of the packed-row engine.

The transform itself lives in `ntt_packed` (whole rows of elements per gmpy2 operation).
Measured on the 2-core dev machine, Fr NTT of 2^16: one mpz per element with slice
passes ~300-350 ms; a numpy limb Montgomery product alone ~13 ms per stage (~200 ms for
the 16 stages before any addition, see `bench/ntt_numpy_probe.py`); packed rows
~110-150 ms. At 2^5 and below the packed path costs a few microseconds more than the
per-element one, too little to keep a second implementation.

Per-element factors (the coset powers, 1/n) are applied while packing or unpacking,
where each element is touched anyway.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from gpu_engine.groth16 import ntt_packed as _packed
from gpu_engine.groth16.field import (
    COSET_GENERATOR,
    R,
    check_domain_size,
    ffjs_root_of_unity,
    fr_inv,
    powers,
    vanishing_on_coset_inverse,
)

try:  # gmpy2 makes the row products linear-time GMP calls; plain ints give the same results
    from gmpy2 import mpz as _num
    HAVE_GMPY2 = True
except ImportError:  # pragma: no cover - exercised only without gmpy2
    _num = int
    HAVE_GMPY2 = False

_P = _num(R)


@lru_cache(maxsize=32)
def _coset_powers(n: int) -> tuple:
    """g**j: the forward coset shift."""
    return tuple(_num(x) for x in powers(COSET_GENERATOR, n))


@lru_cache(maxsize=32)
def _inverse_scales(n: int, coset: bool) -> tuple:
    """1/n, times g**-j for the coset: everything an inverse transform applies per element."""
    if coset:
        return tuple(_num(x) for x in powers(fr_inv(COSET_GENERATOR), n, start=fr_inv(n)))
    return (_num(fr_inv(n)),) * n


@lru_cache(maxsize=32)
def _between_scales(n: int) -> tuple:
    """g**j / n: the iNTT's 1/n and the next coset NTT's shift folded into one product."""
    return tuple(_num(x) for x in powers(COSET_GENERATOR, n, start=fr_inv(n)))


def _reduced(values: Sequence[int], scale: tuple | None):
    if scale is None:
        return (v % R for v in values)
    p = _P
    return (v * s % p for v, s in zip(values, scale))


def ntt(values: Sequence[int], *, inverse: bool = False, coset: bool = False) -> list[int]:
    """Same result as `field.reference_ntt`, much faster."""
    n = len(values)
    check_domain_size(n)
    pl = _packed.plan(n, inverse)
    pre = _coset_powers(n) if coset and not inverse else None
    rows = _packed.forward_rows(_reduced(values, pre), n, pl)
    if not inverse:
        return _packed.finish(rows, pl, None)
    return [int(x) for x in _packed.finish(rows, pl, _inverse_scales(n, coset))]


def compute_h(a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
    """H = (A*B - C)/Z by the 7 NTTs (iNTT a, b, c; coset NTT each; divide; coset iNTT).

    Returns n coefficients; the top one is zero when the R1CS is satisfied. Values stay
    mpz between the transforms and are converted to ints once, at the end."""
    n = len(a)
    check_domain_size(n)
    if not (len(b) == len(c) == n):
        raise ValueError(f"a, b, c must have the same length, got {len(a)}, {len(b)}, {len(c)}")
    inv, fwd = _packed.plan(n, True), _packed.plan(n, False)
    between = _between_scales(n)
    evals = []
    for v in (a, b, c):
        coeffs = _packed.finish(_packed.forward_rows(_reduced(v, None), n, inv), inv, between)
        evals.append(_packed.finish(_packed.forward_rows(coeffs, n, fwd), fwd, None))
    z_inv = _num(vanishing_on_coset_inverse(n))
    p = _P
    eh = ((x * y - z) * z_inv % p for x, y, z in zip(*evals))
    rows = _packed.forward_rows(eh, n, inv)
    return [int(x) for x in _packed.finish(rows, inv, _inverse_scales(n, True))]


@lru_cache(maxsize=32)
def _odd_coset_scales(n: int) -> tuple:
    """w_2n**i / n (ffjavascript's roots): the iNTT's 1/n and the odd-coset shift in one product."""
    return tuple(_num(x) for x in powers(ffjs_root_of_unity(2 * n), n, start=fr_inv(n)))


def compute_h_odd_coset(a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
    """snarkjs's H (what a circom zkey's H points expect): a*b - c on the odd coset of the
    double domain, by six NTTs with ffjavascript's roots and no division (`field.reference_h_odd_coset`)."""
    n = len(a)
    check_domain_size(n)
    if not (len(b) == len(c) == n):
        raise ValueError(f"a, b, c must have the same length, got {len(a)}, {len(b)}, {len(c)}")
    omega = ffjs_root_of_unity(n)
    inv, fwd = _packed.plan(n, True, omega), _packed.plan(n, False, omega)
    between = _odd_coset_scales(n)
    evals = []
    for v in (a, b, c):
        coeffs = _packed.finish(_packed.forward_rows(_reduced(v, None), n, inv), inv, between)
        evals.append(_packed.finish(_packed.forward_rows(coeffs, n, fwd), fwd, None))
    p = _P
    return [int((x * y - z) % p) for x, y, z in zip(*evals)]
