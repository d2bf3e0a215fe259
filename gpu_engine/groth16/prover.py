"""The Groth16 prover, split the way the engine runs it.

`prove_device` is the GPU worker's part: H by the 7 NTTs and the four G1 MSMs (A, B in
G1, the private L part, H). `prove_finalize` is the CPU tail a finalizer runs while the
worker takes the next partition: the G2 MSM for B and the assembly with r, s (the one tail
of both key layouts: circom's `CircuitKey` finalizes here too):

  A = alpha + sum z_j u_j + r delta            B = beta + sum z_j v_j + s delta   (G2; G1 copy for C)
  C = sum_priv z_j L_j + sum h_i H_i + s A + r B1 - r s delta
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from py_arkworks_bls12381 import G1Point, G2Point

from gpu_engine.groth16.circuits import Witness
from gpu_engine.groth16.field import R, fr_random
from gpu_engine.groth16.keys import Params, VerifyingKey
from gpu_engine.groth16.points import to_scalar


class _PicklablePoints:
    """arkworks points do not pickle; these records travel as their affine bytes."""

    _g1: tuple[str, ...] = ()
    _g2: tuple[str, ...] = ()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for name in self._g1 + self._g2:
            state[name] = state[name].to_xy_bytes_be()
        return state

    def __setstate__(self, state: dict) -> None:
        for name in self._g1:
            state[name] = G1Point.from_xy_bytes_unchecked_be(state[name]) if any(state[name]) else G1Point.identity()
        for name in self._g2:
            state[name] = G2Point.from_xy_bytes_unchecked_be(state[name]) if any(state[name]) else G2Point.identity()
        self.__dict__.update(state)


@dataclass(eq=False)
class Proof(_PicklablePoints):
    a: G1Point
    b: G2Point
    c: G1Point
    _g1 = ("a", "c")
    _g2 = ("b",)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Proof) and (self.a, self.b, self.c) == (other.a, other.b, other.c)


@dataclass(eq=False)
class DeviceOutput(_PicklablePoints):
    """The G1 MSM results (without the r, s terms) and the r, s they will be blinded with."""

    index: int
    r: int
    s: int
    msm_a: G1Point
    msm_b1: G1Point
    msm_c: G1Point  # private L part + H part
    timings: dict[str, float] = field(default_factory=dict)
    _g1 = ("msm_a", "msm_b1", "msm_c")


@dataclass
class PartitionProof:
    index: int
    public_inputs: list[int]
    proof: Proof
    timings: dict[str, float]  # synthesis_ms, ntt_ms, msm_g1_ms, msm_g2_ms


def prove_device(params: Params, witness: Witness, backend) -> DeviceOutput:
    """H and the G1 MSMs through `backend` (the part a GPU does)."""
    params.check_witness(witness)
    n = params.domain_size
    pad = [0] * (n - witness.num_constraints)
    t0 = time.perf_counter()
    h = backend.compute_h(witness.a + pad, witness.b + pad, witness.c + pad)
    t1 = time.perf_counter()
    if len(h) != n or h[n - 1] % R:
        raise ValueError("A*B - C is not divisible by Z: the witness does not satisfy the circuit")
    z = witness.assignment
    key = params.shape_hash
    msm_a = backend.msm_g1(params.a_g1, z, bases_key=f"{key}/a")
    zb = [z[j] for j in params.b_support]
    msm_b1 = backend.msm_g1(params.b_g1_support, zb, bases_key=f"{key}/b1")
    msm_l = backend.msm_g1(params.l_g1, z[params.num_public + 1:], bases_key=f"{key}/l")
    msm_h = backend.msm_g1(params.h_g1, h[:n - 1], bases_key=f"{key}/h")
    t2 = time.perf_counter()
    return DeviceOutput(
        index=witness.index, r=fr_random(), s=fr_random(),
        msm_a=msm_a, msm_b1=msm_b1, msm_c=msm_l + msm_h,
        timings={"ntt_ms": (t1 - t0) * 1000.0, "msm_g1_ms": (t2 - t1) * 1000.0},
    )


class FinalizableKey(Protocol):
    """What the CPU tail needs of a key: this engine's `Params` and a circom `CircuitKey` both are one."""

    vk: VerifyingKey
    beta_g1: G1Point
    delta_g1: G1Point
    b_support: list[int]
    b_g2_support: list[G2Point]

    @property
    def shape_hash(self) -> str: ...

    def check_witness(self, witness: Any) -> None: ...


def prove_finalize(key: FinalizableKey, witness: Any, device_out: DeviceOutput, cpu_backend: Any) -> PartitionProof:
    """The G2 MSM for B and the assembly of (A, B, C) with r, s (the CPU tail), for either kind of key.

    `cpu_backend` only needs `msm_g2` (circom's parallel prover passes the B2 MSM it already has)."""
    key.check_witness(witness)
    if device_out.index != witness.index:
        raise ValueError(f"device output of partition {device_out.index} given with witness {witness.index}")
    t0 = time.perf_counter()
    zb = [witness.assignment[j] for j in key.b_support]
    msm_b2 = cpu_backend.msm_g2(key.b_g2_support, zb, bases_key=f"{key.shape_hash}/b2")
    t1 = time.perf_counter()
    a, b2, c = assemble(key.vk, key.beta_g1, key.delta_g1, device_out, msm_b2)
    timings = {
        "synthesis_ms": witness.synth_ms,
        "ntt_ms": device_out.timings.get("ntt_ms", 0.0),
        "msm_g1_ms": device_out.timings.get("msm_g1_ms", 0.0),
        "msm_g2_ms": (t1 - t0) * 1000.0,
    }
    return PartitionProof(witness.index, list(witness.public_inputs), Proof(a, b2, c), timings)


def assemble(vk: VerifyingKey, beta_g1: G1Point, delta_g1: G1Point, device_out: DeviceOutput,
             msm_b2: G2Point) -> tuple[G1Point, G2Point, G1Point]:
    """(A, B, C) from the MSMs and the device part's r, s: the same for every Groth16 key layout
    (this engine's parameters and snarkjs's zkeys)."""
    r, s = to_scalar(device_out.r), to_scalar(device_out.s)
    a = vk.alpha_g1 + device_out.msm_a + delta_g1 * r
    b2 = vk.beta_g2 + msm_b2 + vk.delta_g2 * s
    b1 = beta_g1 + device_out.msm_b1 + delta_g1 * s
    c = device_out.msm_c + a * s + b1 * r - delta_g1 * to_scalar(device_out.r * device_out.s)
    return a, b2, c
