"""The scalar field Fr of BLS12-381 as plain Python ints, plus a reference NTT.

Everything here is Montgomery-free canonical ints (0 <= x < R) so that other
implementations (the gmpy2 NTT in `ntt.py`, the CUDA kernels) can be checked
against it. The reference NTT is deliberately simple; speed lives in `ntt.py`.

Conventions shared by every backend:
- `root_of_unity(n)` is ROOT_OF_UNITY ** (2**TWO_ADICITY / n): the n-th root used by the
  size-n NTT (same choice as arkworks' `Radix2EvaluationDomain`).
- forward NTT: out[i] = sum_j v[j] * w**(i*j) (coefficients -> evaluations at w**i).
- coset NTT: evaluations at COSET_GENERATOR * w**i, i.e. v[j] scaled by g**j first.
- inverse NTT / inverse coset NTT undo the above exactly.
"""
from __future__ import annotations

import secrets
from collections.abc import Sequence

# r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
R = 52435875175126190479447740508185965837690552500527637822603658699938581184513
TWO_ADICITY = 32
MULTIPLICATIVE_GENERATOR = 7
# 7 ** ((R - 1) >> 32): a primitive 2**32-th root of unity.
ROOT_OF_UNITY = pow(MULTIPLICATIVE_GENERATOR, (R - 1) >> TWO_ADICITY, R)
# The coset shift: a generator of the whole group, so it lies in no 2-adic subgroup and
# Z(x) = x**n - 1 never vanishes on the coset.
COSET_GENERATOR = MULTIPLICATIVE_GENERATOR
FR_BYTES = 32
# snarkjs's keys are built on ffjavascript's roots instead: its field takes the smallest
# quadratic non-residue (5 for this r) to the odd part of r - 1. circom keys need these.
FFJS_NON_RESIDUE = 5
FFJS_ROOT_OF_UNITY = pow(FFJS_NON_RESIDUE, (R - 1) >> TWO_ADICITY, R)


def fr(x: int) -> int:
    """Reduce any int into canonical form."""
    return x % R


def fr_inv(x: int) -> int:
    """Multiplicative inverse; ZeroDivisionError for 0 (never silently 0)."""
    x %= R
    if x == 0:
        raise ZeroDivisionError("inverse of zero in Fr")
    return pow(x, -1, R)


def fr_random(nonzero: bool = True) -> int:
    """A uniformly random element from the OS random source."""
    return secrets.randbelow(R - 1) + 1 if nonzero else secrets.randbelow(R)


def batch_inverse(values: Sequence[int]) -> list[int]:
    """Montgomery's trick: n inverses for one modular inversion and 3n multiplications."""
    n = len(values)
    prefix = [1] * (n + 1)
    acc = 1
    for i, v in enumerate(values):
        if v % R == 0:
            raise ZeroDivisionError(f"inverse of zero in Fr (index {i})")
        acc = acc * v % R
        prefix[i + 1] = acc
    inv = pow(acc, -1, R)
    out = [0] * n
    for i in range(n - 1, -1, -1):
        out[i] = inv * prefix[i] % R
        inv = inv * values[i] % R
    return out


def check_domain_size(n: int) -> int:
    """log2(n) for a valid NTT size, or a ValueError saying why not."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"NTT size must be a power of two, got {n}")
    log_n = n.bit_length() - 1
    if log_n > TWO_ADICITY:
        raise ValueError(f"NTT size 2**{log_n} exceeds the 2-adicity 2**{TWO_ADICITY} of Fr")
    return log_n


def root_of_unity(n: int) -> int:
    """The primitive n-th root of unity used by the size-n NTT."""
    log_n = check_domain_size(n)
    return pow(ROOT_OF_UNITY, 1 << (TWO_ADICITY - log_n), R)


def ffjs_root_of_unity(n: int) -> int:
    """ffjavascript's primitive n-th root (`Fr.w[log2 n]`): the one snarkjs's zkeys assume."""
    log_n = check_domain_size(n)
    return pow(FFJS_ROOT_OF_UNITY, 1 << (TWO_ADICITY - log_n), R)


def powers(base: int, count: int, start: int = 1) -> list[int]:
    """[start, start*base, start*base**2, ...] (count items)."""
    out = [0] * count
    acc = start % R
    for i in range(count):
        out[i] = acc
        acc = acc * base % R
    return out


def bit_reverse_permutation(n: int) -> list[int]:
    """rev[i] = i with its log2(n) bits reversed."""
    log_n = check_domain_size(n)
    rev = [0] * n
    for i in range(1, n):
        rev[i] = (rev[i >> 1] >> 1) | ((i & 1) << (log_n - 1))
    return rev


def naive_dft(values: Sequence[int], omega: int) -> list[int]:
    """O(n^2) evaluation at omega**i: the oracle the NTTs are tested against."""
    n = len(values)
    out = []
    for i in range(n):
        x = pow(omega, i, R)
        acc = 0
        for coeff in reversed(values):
            acc = (acc * x + coeff) % R
        out.append(acc)
    return out


def reference_ntt(values: Sequence[int], *, inverse: bool = False, coset: bool = False,
                  omega: int | None = None) -> list[int]:
    """Plain iterative radix-2 Cooley-Tukey NTT on canonical ints (the readable reference).

    `omega`: the primitive n-th root to transform with (default `root_of_unity(n)`)."""
    n = len(values)
    check_domain_size(n)
    a = [v % R for v in values]
    if coset and not inverse:
        a = [v * s % R for v, s in zip(a, powers(COSET_GENERATOR, n))]
    omega = root_of_unity(n) if omega is None else omega
    if inverse:
        omega = fr_inv(omega)
    rev = bit_reverse_permutation(n)
    a = [a[rev[i]] for i in range(n)]
    m = 2
    while m <= n:
        half = m // 2
        tw = powers(pow(omega, n // m, R), half)
        for start in range(0, n, m):
            for k in range(half):
                u = a[start + k]
                v = a[start + k + half] * tw[k] % R
                a[start + k] = (u + v) % R
                a[start + k + half] = (u - v) % R
        m *= 2
    if inverse:
        n_inv = fr_inv(n)
        a = [v * n_inv % R for v in a]
        if coset:
            a = [v * s % R for v, s in zip(a, powers(fr_inv(COSET_GENERATOR), n))]
    return a


def vanishing_on_coset_inverse(n: int) -> int:
    """1 / Z(g*w**i) for the size-n domain: Z(x) = x**n - 1 is the constant g**n - 1 there."""
    return fr_inv(pow(COSET_GENERATOR, n, R) - 1)


def reference_compute_h(a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
    """H = (A*B - C)/Z from evaluations on the domain, by the 7 reference NTTs (n coefficients,
    the top one zero for a satisfied R1CS)."""
    n = len(a)
    if not (len(b) == len(c) == n):
        raise ValueError(f"a, b, c must have the same length, got {len(a)}, {len(b)}, {len(c)}")
    ca, cb, cc = (reference_ntt(v, inverse=True) for v in (a, b, c))
    ea, eb, ec = (reference_ntt(v, coset=True) for v in (ca, cb, cc))
    z_inv = vanishing_on_coset_inverse(n)
    eh = [(x * y - z) * z_inv % R for x, y, z in zip(ea, eb, ec)]
    return reference_ntt(eh, inverse=True, coset=True)


def reference_h_odd_coset(a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
    """snarkjs's H from evaluations on the domain: each of a, b, c interpolated (iNTT), its
    coefficient i times w_2n**i, evaluated (NTT), all with ffjavascript's roots, so the values
    are at the odd points w_2n**(2i+1) of the double domain; then a*b - c there. No division:
    Z is the constant -2 on that coset and the zkey's H points carry it. n values."""
    n = len(a)
    if not (len(b) == len(c) == n):
        raise ValueError(f"a, b, c must have the same length, got {len(a)}, {len(b)}, {len(c)}")
    w_n, shifts = ffjs_root_of_unity(n), powers(ffjs_root_of_unity(2 * n), n)
    odd = []
    for v in (a, b, c):
        coeffs = reference_ntt(v, inverse=True, omega=w_n)
        odd.append(reference_ntt([x * s % R for x, s in zip(coeffs, shifts)], omega=w_n))
    return [(x * y - z) % R for x, y, z in zip(*odd)]
