"""The Groth16 prover for circom circuits, split as the engine runs it (see groth16/prover.py).

Same proof as snarkjs's `groth16 prove`, with these keys: a = A.w and b = B.w per row (the
synthesis step), c = a*b; H by the backend's `compute_h_odd_coset` (snarkjs's form, no division);
G1 MSMs for A, B1 and C (private C points plus the H points) on the device; the G2 MSM for B and
the assembly in the finalizer (`groth16.prover.prove_finalize`, the one CPU tail of both key layouts):

  pi_a = alpha + sum w_j A_j + r delta    pi_b = beta + sum w_j B2_j + s delta (G2; B1 in G1)
  pi_c = sum_priv w_j C_j + sum h_i H_i + s pi_a + r B1 - r s delta
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from py_arkworks_bls12381 import G1Point, G2Point

from gpu_engine.groth16.field import R, fr_random
from gpu_engine.groth16.keys import VerifyingKey
from gpu_engine.groth16.prover import DeviceOutput, prove_finalize


@dataclass
class CircuitKey:
    """A registered circuit's proving key in this engine's forms (from the converted-key cache)."""

    name: str
    key_hash: str
    num_vars: int
    num_public: int
    domain_size: int
    num_constraints: int
    vk: VerifyingKey
    beta_g1: G1Point
    delta_g1: G1Point
    a_g1: list[G1Point]
    b_g1: list[G1Point]
    b_g2: list[G2Point]
    c_g1: list[G1Point]
    h_g1: list[G1Point]
    a_coeffs: list[tuple[int, int, int]] = field(repr=False)
    b_coeffs: list[tuple[int, int, int]] = field(repr=False)
    # The MSMs skip signals whose base is the point at infinity (absent from A or B).
    a_support: list[int] = field(init=False, repr=False)
    b_support: list[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        g1_zero, g2_zero = G1Point.identity(), G2Point.identity()
        self.a_support = [j for j, p in enumerate(self.a_g1) if p != g1_zero]
        self.b_support = [j for j, p in enumerate(self.b_g2) if p != g2_zero or self.b_g1[j] != g1_zero]
        self.a_g1_support = [self.a_g1[j] for j in self.a_support]
        self.b_g1_support = [self.b_g1[j] for j in self.b_support]
        self.b_g2_support = [self.b_g2[j] for j in self.b_support]

    @property
    def shape_hash(self) -> str:
        return self.key_hash

    def check_witness(self, witness: CircuitWitness) -> None:
        """A witness made for this key, of its shape (ValueError saying what differs)."""
        if witness.key_hash != self.key_hash:
            raise ValueError(f"witness made for another key of {witness.kind} than {self.name}'s")
        if len(witness.assignment) != self.num_vars or len(witness.a) != self.domain_size:
            raise ValueError(f"witness shape ({len(witness.assignment)} wires, {len(witness.a)} rows) does not match "
                             f"circuit {self.name} ({self.num_vars} wires, {self.domain_size} rows)")


@dataclass
class CircuitWitness:
    """One partition's witness and its row evaluations: plain data for the process pools."""

    kind: str
    key_hash: str
    job_id: str
    index: int
    assignment: list[int] = field(repr=False)
    public_inputs: list[int]  # snarkjs's publicSignals: outputs, then public inputs (wires 1..nPublic)
    synth_ms: float
    a: list[int] = field(repr=False, default_factory=list)
    b: list[int] = field(repr=False, default_factory=list)


def row_evaluations(key: CircuitKey, w: list[int]) -> tuple[list[int], list[int]]:
    """a = A.w and b = B.w on every row of the domain (rows past the circuit stay 0)."""
    n = key.domain_size
    a, b = [0] * n, [0] * n
    for row, sig, v in key.a_coeffs:
        a[row] += v * w[sig]
    for row, sig, v in key.b_coeffs:
        b[row] += v * w[sig]
    return [x % R for x in a], [x % R for x in b]


def make_witness(key: CircuitKey, job_id: str, index: int, assignment: list[int], synth_ms: float) -> CircuitWitness:
    if len(assignment) != key.num_vars:
        raise ValueError(f"the witness has {len(assignment)} values, circuit {key.name} has {key.num_vars} wires")
    t0 = time.perf_counter()
    a, b = row_evaluations(key, assignment)
    return CircuitWitness(key.name, key.key_hash, job_id, index, assignment, list(assignment[1:key.num_public + 1]),
                          synth_ms + (time.perf_counter() - t0) * 1000.0, a, b)


def prove_device(key: CircuitKey, witness: CircuitWitness, backend) -> DeviceOutput:
    """H (odd coset) and the G1 MSMs through `backend` (the part a GPU does)."""
    key.check_witness(witness)
    t0 = time.perf_counter()
    c = [x * y % R for x, y in zip(witness.a, witness.b)]
    h = backend.compute_h_odd_coset(witness.a, witness.b, c)
    t1 = time.perf_counter()
    if len(h) != key.domain_size:
        raise ValueError(f"the backend returned {len(h)} H values for a domain of {key.domain_size}")
    z = witness.assignment
    kh = key.key_hash
    msm_a = backend.msm_g1(key.a_g1_support, [z[j] for j in key.a_support], bases_key=f"{kh}/a")
    zb = [z[j] for j in key.b_support]
    msm_b1 = backend.msm_g1(key.b_g1_support, zb, bases_key=f"{kh}/b1")
    msm_c = backend.msm_g1(key.c_g1, z[key.num_public + 1:], bases_key=f"{kh}/c")
    msm_h = backend.msm_g1(key.h_g1, h, bases_key=f"{kh}/h")
    t2 = time.perf_counter()
    return DeviceOutput(index=witness.index, r=fr_random(), s=fr_random(), msm_a=msm_a, msm_b1=msm_b1,
                        msm_c=msm_c + msm_h, timings={"ntt_ms": (t1 - t0) * 1000.0, "msm_g1_ms": (t2 - t1) * 1000.0})


__all__ = ["CircuitKey", "CircuitWitness", "make_witness", "prove_device", "prove_finalize", "row_evaluations"]
