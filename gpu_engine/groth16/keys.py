"""Proving/verifying keys and their integrity-checked file format.

The file is the engine's one key container (`keyfile.py`: magic, JSON header, blobs, sha256).
Points are affine big-endian x||y (G1 96 bytes, G2 192) and are read back without curve
checks: the trailing checksum already proves the bytes are the ones we wrote, and the
header's shape hash proves they belong to the circuit asked for.
"""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from typing import Any

from py_arkworks_bls12381 import G1Point, G2Point

from gpu_engine.groth16.keyfile import KeyFileError, pack, unpack
from gpu_engine.groth16.points import g1_from_bytes_unchecked, g1_to_bytes, g2_from_bytes_unchecked, g2_to_bytes

MAGIC = b"VMG16PK\x01"
FORMAT_VERSION = 1
G1_LEN, G2_LEN = 96, 192


class ParamsFileError(KeyFileError):
    """A parameter file that must not be used (corrupt, truncated, foreign or stale)."""


@dataclass
class VerifyingKey:
    alpha_g1: G1Point
    beta_g2: G2Point
    gamma_g2: G2Point
    delta_g2: G2Point
    ic: list[G1Point]  # [(beta*u_j + alpha*v_j + w_j)/gamma]_1 for the one and each public input

    @property
    def num_public(self) -> int:
        return len(self.ic) - 1

    def fingerprint(self) -> str:
        """sha256 (hex) of the key's points in a fixed order: names this key in bundles and job rows."""
        return vk_fingerprint(self)


def vk_fingerprint(vk: VerifyingKey) -> str:
    h = hashlib.sha256(b"vastmanager-groth16-vk-v1")
    for p in (vk.alpha_g1, vk.beta_g2, vk.gamma_g2, vk.delta_g2):
        h.update(g1_to_bytes(p) if isinstance(p, G1Point) else g2_to_bytes(p))
    h.update(struct.pack("<I", len(vk.ic)))
    for p in vk.ic:
        h.update(g1_to_bytes(p))
    return h.hexdigest()


@dataclass
class Params:
    """Everything one circuit shape needs to be proved and verified."""

    kind: str
    scale: int
    shape_hash: str
    num_constraints: int
    domain_size: int
    num_public: int   # public inputs, the constant one not counted
    num_vars: int     # len(z)
    vk: VerifyingKey
    beta_g1: G1Point
    delta_g1: G1Point
    a_g1: list[G1Point]   # [u_j(tau)]_1, j over all of z
    b_g1: list[G1Point]   # [v_j(tau)]_1
    b_g2: list[G2Point]   # [v_j(tau)]_2
    l_g1: list[G1Point]   # [(beta*u_j + alpha*v_j + w_j)/delta]_1, private j
    h_g1: list[G1Point]   # [tau^i * Z(tau)/delta]_1, i < domain_size - 1
    # Variables absent from B (a third of them in the MiMC circuits) have identity bases:
    # the prover's B MSMs run over the others only.
    b_support: list[int] = field(init=False, repr=False)
    b_g1_support: list[G1Point] = field(init=False, repr=False)
    b_g2_support: list[G2Point] = field(init=False, repr=False)

    def check_witness(self, witness) -> None:
        """A witness of this kind, scale and shape (ValueError saying what differs)."""
        if witness.kind != self.kind or witness.scale != self.scale:
            raise ValueError(f"witness is for {witness.kind} scale {witness.scale}, "
                             f"params for {self.kind} scale {self.scale}")
        if len(witness.assignment) != self.num_vars or witness.num_constraints != self.num_constraints:
            raise ValueError(
                f"witness shape ({len(witness.assignment)} variables, {witness.num_constraints} constraints) does "
                f"not match the params ({self.num_vars} variables, {self.num_constraints} constraints)"
            )

    def __post_init__(self) -> None:
        identity = G2Point.identity()
        self.b_support = [j for j, p in enumerate(self.b_g2) if p != identity]
        self.b_g1_support = [self.b_g1[j] for j in self.b_support]
        self.b_g2_support = [self.b_g2[j] for j in self.b_support]


_VECTORS = (("ic", 1), ("a_g1", 1), ("b_g1", 1), ("b_g2", 2), ("l_g1", 1), ("h_g1", 1))


def _vector(params: Params, name: str) -> list:
    return params.vk.ic if name == "ic" else getattr(params, name)


def dump_params(params: Params) -> bytes:
    header = {
        "format": FORMAT_VERSION,
        "kind": params.kind,
        "scale": params.scale,
        "shape_hash": params.shape_hash,
        "num_constraints": params.num_constraints,
        "domain_size": params.domain_size,
        "num_public": params.num_public,
        "num_vars": params.num_vars,
        "counts": {name: len(_vector(params, name)) for name, _ in _VECTORS},
    }
    vk = params.vk
    parts = [g1_to_bytes(vk.alpha_g1), g2_to_bytes(vk.beta_g2), g2_to_bytes(vk.gamma_g2), g2_to_bytes(vk.delta_g2)]
    parts += [g1_to_bytes(params.beta_g1), g1_to_bytes(params.delta_g1)]
    for name, group in _VECTORS:
        enc = g1_to_bytes if group == 1 else g2_to_bytes
        parts += [enc(p) for p in _vector(params, name)]
    return pack(MAGIC, header, parts)


def load_params_bytes(raw: bytes, expected_shape_hash: str) -> Params:
    """Parse and check a parameter file; ParamsFileError says what is wrong."""
    header, blobs = unpack(raw, MAGIC, what="parameter file", error=ParamsFileError, format_version=FORMAT_VERSION)
    if header.get("shape_hash") != expected_shape_hash:
        raise ParamsFileError("stale: made for another circuit shape")
    counts = header["counts"]
    blobs.expect_size(G1_LEN * 3 + G2_LEN * 3 + sum(counts[n] * (G1_LEN if g == 1 else G2_LEN) for n, g in _VECTORS))

    def take(size: int) -> bytes:
        return bytes(blobs.take(size))

    alpha = g1_from_bytes_unchecked(take(G1_LEN))
    beta2, gamma2, delta2 = (g2_from_bytes_unchecked(take(G2_LEN)) for _ in range(3))
    beta1, delta1 = g1_from_bytes_unchecked(take(G1_LEN)), g1_from_bytes_unchecked(take(G1_LEN))
    vectors: dict[str, list[Any]] = {}  # G1 or G2 points, as _VECTORS says per name
    for name, group in _VECTORS:
        size, dec = (G1_LEN, g1_from_bytes_unchecked) if group == 1 else (G2_LEN, g2_from_bytes_unchecked)
        vectors[name] = [dec(take(size)) for _ in range(counts[name])]
    vk = VerifyingKey(alpha, beta2, gamma2, delta2, vectors.pop("ic"))
    return Params(
        kind=header["kind"], scale=header["scale"], shape_hash=header["shape_hash"],
        num_constraints=header["num_constraints"], domain_size=header["domain_size"],
        num_public=header["num_public"], num_vars=header["num_vars"], vk=vk,
        beta_g1=beta1, delta_g1=delta1, **vectors,
    )
