"""MiMC over Fr, natively and as R1CS gadgets, and the Merkle inclusion built on it.

MiMC-p/p with the permutation x -> x**5 (gcd(5, r-1) = 1, so it is a bijection) and
ceil(255 / log2 5) = 110 rounds: E_k(x) = F_109(...F_0(x)) + k with F_i(x) = (x + k + c_i)**5.
The two-to-one compression is Miyaguchi-Preneel, H(l, r) = E_l(r) + l + r. Each round
costs 3 constraints (t^2, t^4, t^5); one more pins the output to a fresh variable so
linear combinations stay short along chains and paths.
"""
from __future__ import annotations

import hashlib

from gpu_engine.groth16.field import R
from gpu_engine.groth16.r1cs import LC, ONE, ConstraintSystem

ROUNDS = 110
ROUND_CONSTANTS: tuple[int, ...] = (0,) + tuple(
    int.from_bytes(hashlib.sha256(b"vastmanager/mimc5/%d" % i).digest(), "big") % R for i in range(1, ROUNDS)
)
CONSTRAINTS_PER_HASH = 3 * ROUNDS + 1


def mimc_encrypt(key: int, x: int) -> int:
    for c in ROUND_CONSTANTS:
        x = pow((x + key + c) % R, 5, R)
    return (x + key) % R


def mimc_compress(left: int, right: int) -> int:
    return (mimc_encrypt(left, right) + left + right) % R


def compress_gadget(cs: ConstraintSystem, left: LC, right: LC, name: str) -> LC:
    """In-circuit H(left, right); returns a single-variable LC holding the digest."""
    lv, rv = cs.value(left), cs.value(right)
    x, xv = right, rv
    for i, c in enumerate(ROUND_CONSTANTS):
        t = x + left + c
        tv = (xv + lv + c) % R
        t2v = tv * tv % R
        t4v = t2v * t2v % R
        t5v = t4v * tv % R
        t2 = cs.alloc(t2v)
        cs.enforce(t, t, t2, f"{name}: round {i} square")
        t4 = cs.alloc(t4v)
        cs.enforce(t2, t2, t4, f"{name}: round {i} fourth power")
        x = cs.alloc(t5v)
        cs.enforce(t4, t, x, f"{name}: round {i} fifth power")
        xv = t5v
    out = cs.alloc((xv + 2 * lv + rv) % R)
    cs.enforce(x + left.scale(2) + right, LC.var(ONE), out, f"{name}: output")
    return out


def bits_gadget(cs: ConstraintSystem, number: LC, nbits: int, name: str) -> list[LC]:
    """Little-endian bits of `number`, each boolean, recomposing to it (so number < 2**nbits)."""
    value = cs.value(number)
    bits = []
    total = LC()
    for i in range(nbits):
        bit = cs.alloc((value >> i) & 1)
        cs.enforce(bit, LC.var(ONE) - bit, LC(), f"{name}: bit {i} is boolean")
        bits.append(bit)
        total = total + bit.scale(1 << i)
    cs.enforce(total, LC.var(ONE), number, f"{name}: bits recompose")
    return bits


def merkle_root_gadget(cs: ConstraintSystem, leaf: LC, bits: list[LC], siblings: list[LC], name: str) -> LC:
    """Walk from `leaf` up: at level i the current node is the right child when bits[i] is 1."""
    if len(bits) != len(siblings):
        raise ValueError("one sibling per path bit")
    cur = leaf
    for level, (bit, sib) in enumerate(zip(bits, siblings)):
        cur_v, sib_v = cs.value(cur), cs.value(sib)
        left = cs.alloc(sib_v if cs.value(bit) else cur_v)
        # left = cur + bit * (sib - cur)
        cs.enforce(bit, sib - cur, left - cur, f"{name}: level {level} select")
        right = cur + sib - left
        cur = compress_gadget(cs, left, right, f"{name}: level {level} hash")
    return cur


class MerkleTree:
    """A complete binary MiMC tree, computed natively (to make honest witnesses)."""

    def __init__(self, leaves: list[int]) -> None:
        n = len(leaves)
        if n < 1 or n & (n - 1):
            raise ValueError(f"a Merkle tree needs a power-of-two number of leaves, got {n}")
        self.levels = [list(leaves)]
        while len(self.levels[-1]) > 1:
            prev = self.levels[-1]
            self.levels.append([mimc_compress(prev[i], prev[i + 1]) for i in range(0, len(prev), 2)])

    @property
    def root(self) -> int:
        return self.levels[-1][0]

    @property
    def depth(self) -> int:
        return len(self.levels) - 1

    def path(self, index: int) -> list[int]:
        """Siblings from the leaf level up."""
        out = []
        for level in self.levels[:-1]:
            out.append(level[index ^ 1])
            index >>= 1
        return out
