"""snarkjs's JSON forms: `verification_key.json`, `proof.json`, `public.json`, field for field.

Points are projective decimal strings with z = "1" (G2: [[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]),
the point at infinity as snarkjs writes it (G1 ["0", "1", "0"]); `vk_alphabeta_12` is e(alpha,
beta) as [[Fq2 x3], [Fq2 x3]] (arkworks serializes Fq12 in the same tower order, little-endian).
"""
from __future__ import annotations

from collections.abc import Sequence

from py_arkworks_bls12381 import GT, G1Point, G2Point

from gpu_engine.groth16.bundle import BundleFormatError, parse_vk
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


def _affine_g1(p: object, where: str) -> object:
    """snarkjs's projective G1 (z = 1, or ["0", "1", "0"] at infinity) as the exchange format's [x, y]."""
    if not (isinstance(p, list) and len(p) == 3):
        raise BundleFormatError(f"{where}: expected [x, y, z], got {p!r:.80}")
    return ["0", "0"] if p[2] == "0" else p[:2]


def _affine_g2(p: object, where: str) -> object:
    if not (isinstance(p, list) and len(p) == 3):
        raise BundleFormatError(f"{where}: expected [[x0, x1], [y0, y1], [z0, z1]], got {p!r:.80}")
    return [["0", "0"], ["0", "0"]] if p[2] == ["0", "0"] else p[:2]


def parse_verification_key(obj: object) -> VerifyingKey:
    """snarkjs's `verification_key.json` (groth16, bls12381) as a checked VerifyingKey; BundleFormatError
    names the field at fault. Every point is checked on its curve and in its subgroup."""
    if not isinstance(obj, dict):
        raise BundleFormatError(f"verification key: expected an object, got {type(obj).__name__}")
    for key, want in (("protocol", PROTOCOL), ("curve", CURVE)):
        if obj.get(key) != want:
            raise BundleFormatError(f"{key}: {obj.get(key)!r}, expected {want!r}")
    ic = obj.get("IC")
    if not isinstance(ic, list) or not ic:
        raise BundleFormatError("IC: expected a non-empty list of G1 points")
    exchange = {"alpha_g1": _affine_g1(obj.get("vk_alpha_1"), "vk_alpha_1"),
                **{f"{n}_g2": _affine_g2(obj.get(f"vk_{n}_2"), f"vk_{n}_2") for n in ("beta", "gamma", "delta")},
                "ic": [_affine_g1(p, f"IC[{i}]") for i, p in enumerate(ic)]}
    vk = parse_vk(exchange)
    if obj.get("nPublic") != vk.num_public:
        raise BundleFormatError(f"nPublic: {obj.get('nPublic')!r}, but the key has {vk.num_public} public signals")
    return vk
