"""Groth16 parameter generation for one circuit shape (a trusted-setup ceremony of one).

The toxic waste (tau, alpha, beta, gamma, delta) comes from `secrets` and lives only in
this function's locals. QAP polynomials are evaluated at tau through the Lagrange basis,
L_i(tau) = Z(tau)/n * w^i / (tau - w^i), with one batch inversion: O(n + nnz), not n^2.
The group elements are fixed-base scalar multiplications of the generators through a
table of d * 256**i * G (8-bit windows): at most 32 additions per scalar, 2-3x faster than
arkworks' variable-base multiplication here. Zero scalars become the identity at no cost.
"""
from __future__ import annotations

from collections.abc import Callable

from py_arkworks_bls12381 import G1Point, G2Point

from gpu_engine.groth16.field import R, batch_inverse, fr_inv, fr_random, powers, root_of_unity
from gpu_engine.groth16.keys import Params, VerifyingKey
from gpu_engine.groth16.points import to_scalar
from gpu_engine.groth16.r1cs import R1CSMatrices

Progress = Callable[[str, int, int], None]  # (step, done, total)


def domain_size_for(num_constraints: int) -> int:
    """The smallest power of two holding every constraint (at least 2)."""
    n = 2
    while n < num_constraints:
        n *= 2
    return n


def qap_at(matrices: R1CSMatrices, n: int, tau: int) -> tuple[list[int], list[int], list[int], int]:
    """u_j(tau), v_j(tau), w_j(tau) for every variable j, and Z(tau)."""
    omega = root_of_unity(n)
    z_tau = (pow(tau, n, R) - 1) % R
    if z_tau == 0:
        raise ValueError("tau lies in the evaluation domain")
    w_pows = powers(omega, n)
    inv = batch_inverse([(tau - w) % R for w in w_pows])
    scale = z_tau * fr_inv(n) % R
    m = matrices.num_vars
    u, v, w = [0] * m, [0] * m, [0] * m
    for i, (a, b, c) in enumerate(matrices.constraints):
        lag = scale * w_pows[i] % R * inv[i] % R
        for j, coeff in a:
            u[j] = (u[j] + coeff * lag) % R
        for j, coeff in b:
            v[j] = (v[j] + coeff * lag) % R
        for j, coeff in c:
            w[j] = (w[j] + coeff * lag) % R
    return u, v, w, z_tau


class FixedBase:
    """Precomputed multiples of one base point for fast repeated scalar multiplication."""

    def __init__(self, base) -> None:
        self.identity = type(base).identity()
        self.table = []
        for _ in range(32):  # 32 windows of 8 bits cover 255-bit scalars
            row = [self.identity, base]
            for _ in range(254):
                row.append(row[-1] + base)
            self.table.append(row)
            base = row[-1] + base  # 256 * base

    def mul(self, x: int):
        acc = self.identity
        for row, digit in zip(self.table, (x % R).to_bytes(32, "little")):
            if digit:
                acc = acc + row[digit]
        return acc


def _mul_all(base: FixedBase, scalars: list[int], step: str, progress: Progress | None, done: list[int],
             total: int) -> list:
    identity = base.identity
    mul = base.mul
    out = []
    for x in scalars:
        out.append(mul(x) if x else identity)
        done[0] += 1
        if progress and done[0] % 256 == 0:
            progress(step, done[0], total)
    return out


def generate_params(kind: str, scale: int, matrices: R1CSMatrices, shape_hash: str,
                    progress: Progress | None = None) -> Params:
    n = domain_size_for(matrices.num_constraints)
    while True:
        tau = fr_random()
        if pow(tau, n, R) != 1:
            break
    alpha, beta, gamma, delta = (fr_random() for _ in range(4))
    u, v, w, z_tau = qap_at(matrices, n, tau)
    gamma_inv, delta_inv = fr_inv(gamma), fr_inv(delta)
    k = matrices.num_public + 1
    mixed = [(beta * uj + alpha * vj + wj) % R for uj, vj, wj in zip(u, v, w)]
    ic = [x * gamma_inv % R for x in mixed[:k]]
    lq = [x * delta_inv % R for x in mixed[k:]]
    hq = powers(tau, n - 1, start=z_tau * delta_inv % R)

    g1, g2 = G1Point(), G2Point()
    t1, t2 = FixedBase(g1), FixedBase(g2)
    total = len(ic) + len(lq) + len(hq) + 3 * matrices.num_vars
    done = [0]
    vk = VerifyingKey(
        alpha_g1=g1 * to_scalar(alpha), beta_g2=g2 * to_scalar(beta),
        gamma_g2=g2 * to_scalar(gamma), delta_g2=g2 * to_scalar(delta),
        ic=_mul_all(t1, ic, "IC", progress, done, total),
    )
    params = Params(
        kind=kind, scale=scale, shape_hash=shape_hash, num_constraints=matrices.num_constraints,
        domain_size=n, num_public=matrices.num_public, num_vars=matrices.num_vars, vk=vk,
        beta_g1=g1 * to_scalar(beta), delta_g1=g1 * to_scalar(delta),
        a_g1=_mul_all(t1, u, "A (G1)", progress, done, total),
        b_g1=_mul_all(t1, v, "B (G1)", progress, done, total),
        b_g2=_mul_all(t2, v, "B (G2)", progress, done, total),
        l_g1=_mul_all(t1, lq, "L (G1)", progress, done, total),
        h_g1=_mul_all(t1, hq, "H (G1)", progress, done, total),
    )
    del tau, alpha, beta, gamma, delta, gamma_inv, delta_inv  # the toxic waste goes no further
    if progress:
        progress("done", total, total)
    return params
