"""Why the CPU NTT does not use numpy limbs: the cost of one vectorized Montgomery product.

Usage: .venv/bin/python bench/ntt_numpy_probe.py
Elements as 16 limbs of 16 bits (uint64 lanes, so products and column sums fit); one numpy
operation per limb step across all elements, which is how a limb NTT would multiply the
n/2 twiddle products of one stage. Prints ms per product batch and ns per element; a size-n
NTT needs log2(n) such batches before any of its additions (compare `bench/groth16.py`).
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpu_engine.groth16.field import R

LIMBS, BITS = 16, 16
MASK = np.uint64((1 << BITS) - 1)
P_LIMBS = np.array([(R >> (BITS * i)) & ((1 << BITS) - 1) for i in range(LIMBS)], np.uint64)
PINV = np.uint64((-pow(R, -1, 1 << BITS)) % (1 << BITS))


def to_limbs(xs: list[int]) -> np.ndarray:
    return np.array([[(x >> (BITS * i)) & ((1 << BITS) - 1) for i in range(LIMBS)] for x in xs], np.uint64).T.copy()


def from_limbs(a: np.ndarray) -> list[int]:
    return [sum(int(a[i, j]) << (BITS * i) for i in range(a.shape[0])) for j in range(a.shape[1])]


def mont_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * b * 2**-256 mod p (below 2p) per column; a, b are (LIMBS, N)."""
    t = np.zeros((2 * LIMBS + 1, a.shape[1]), np.uint64)
    for i in range(LIMBS):
        t[i:i + LIMBS] += a[i] * b
    shift = np.uint64(BITS)
    for i in range(LIMBS):
        m = (t[i] * PINV) & MASK
        t[i:i + LIMBS] += m * P_LIMBS[:, None]
        t[i + 1] += t[i] >> shift
    res = t[LIMBS:]
    for i in range(LIMBS):
        res[i + 1] += res[i] >> shift
        res[i] &= MASK
    return res


def main() -> None:
    rng = random.Random(1)
    print(f"{'elements':>9}{'ms':>9}{'ns/elem':>9}")
    for log_n in (9, 12, 15):
        n = 1 << log_n
        xs, ys = [rng.randrange(R) for _ in range(n)], [rng.randrange(R) for _ in range(n)]
        a, b = to_limbs(xs), to_limbs(ys)
        got = from_limbs(mont_mul(a, b)[:, :64])
        if [g % R for g in got] != [x * y * pow(2, -256, R) % R for x, y in zip(xs[:64], ys[:64])]:
            raise SystemExit("limb Montgomery product is wrong")
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            mont_mul(a, b)
            runs.append(time.perf_counter() - t0)
        best = min(runs)
        print(f"{n:>9}{best * 1e3:>9.2f}{best / n * 1e9:>9.0f}")


if __name__ == "__main__":
    main()
