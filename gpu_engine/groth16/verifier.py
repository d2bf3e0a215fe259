"""The Groth16 verifier: e(A, B) = e(alpha, beta) * e(IC(x), gamma) * e(C, delta)."""
from __future__ import annotations

from collections.abc import Sequence

from py_arkworks_bls12381 import GT, G1Point

from gpu_engine.groth16.field import R
from gpu_engine.groth16.keys import VerifyingKey
from gpu_engine.groth16.points import scalars_to_arkworks
from gpu_engine.groth16.prover import Proof


def verify_partition(vk: VerifyingKey, public_inputs: Sequence[int], proof: Proof) -> bool:
    """True only for a valid proof of these public inputs under this key.

    A wrong number of inputs or an input outside Fr is a rejection, not an error: a
    proof checked against another circuit's key must simply fail."""
    if len(public_inputs) != vk.num_public:
        return False
    if any(not isinstance(x, int) or not 0 <= x < R for x in public_inputs):
        return False
    acc = vk.ic[0]
    if public_inputs:
        acc = acc + G1Point.multiexp_unchecked(vk.ic[1:], scalars_to_arkworks(public_inputs))
    return bool(GT.pairing_check(
        [proof.a, -vk.alpha_g1, -acc, -proof.c],
        [proof.b, vk.beta_g2, vk.gamma_g2, vk.delta_g2],
    ))
