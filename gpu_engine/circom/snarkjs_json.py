"""snarkjs's JSON forms: `verification_key.json`, `proof.json`, `public.json`, field for field.

Points are projective decimal strings with z = "1" (G2: [[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]),
the point at infinity as snarkjs writes it (G1 ["0", "1", "0"]); `vk_alphabeta_12` is e(alpha,
beta) as [[Fq2 x3], [Fq2 x3]] (arkworks serializes Fq12 in the same tower order, little-endian).
"""
from __future__ import annotations

from collections.abc import Sequence

from py_arkworks_bls12381 import GT, G1Point, G2Point

from gpu_engine.groth16.keys import VerifyingKey
from gpu_engine.groth16.points import g1_to_ints, g2_to_ints
from gpu_engine.groth16.prover import Proof

CURVE = "bls12381"
PROTOCOL = "groth16"


def g1(p: G1Point) -> list[str]:
    if p == G1Point.identity():
        return ["0", "1", "0"]
    x, y = g1_to_ints(p)
    return [str(x), str(y), "1"]


def g2(p: G2Point) -> list[list[str]]:
    if p == G2Point.identity():
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    x, y = g2_to_ints(p)
    return [[str(x[0]), str(x[1])], [str(y[0]), str(y[1])], ["1", "0"]]


def gt(value: GT) -> list[list[list[str]]]:
    raw = bytes.fromhex(str(value))
    c = [str(int.from_bytes(raw[i * 48:(i + 1) * 48], "little")) for i in range(12)]
    return [[[c[k * 6 + j * 2], c[k * 6 + j * 2 + 1]] for j in range(3)] for k in range(2)]


def verification_key(vk: VerifyingKey) -> dict:
    """What `snarkjs zkey export verificationkey` writes for this key."""
    return {
        "protocol": PROTOCOL,
        "curve": CURVE,
        "nPublic": vk.num_public,
        "vk_alpha_1": g1(vk.alpha_g1),
        "vk_beta_2": g2(vk.beta_g2),
        "vk_gamma_2": g2(vk.gamma_g2),
        "vk_delta_2": g2(vk.delta_g2),
        "vk_alphabeta_12": gt(GT.pairing(vk.alpha_g1, vk.beta_g2)),
        "IC": [g1(p) for p in vk.ic],
    }


def proof(p: Proof) -> dict:
    """What `snarkjs groth16 prove` writes to proof.json."""
    return {"pi_a": g1(p.a), "pi_b": g2(p.b), "pi_c": g1(p.c), "protocol": PROTOCOL, "curve": CURVE}


def public_signals(values: Sequence[int]) -> list[str]:
    """What it writes to public.json: decimal strings, outputs first, then public inputs."""
    return [str(int(v)) for v in values]
