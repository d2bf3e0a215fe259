"""One circom proof's independent parts spread over a process pool: the latency of a single proof.

The CPU prover's parts do not depend on each other except H's MSM on H: (H by the odd-coset
NTTs, then its MSM), the G2 MSM for B, and the G1 MSMs for A, B1 and C are five tasks. arkworks
holds the GIL for a whole MSM, so threads would run them one after another; pool children run
them side by side. Each child loads the circuit's converted key once (`api.load`, cached per
process), so only scalars cross the process boundary and only points (bytes) come back. The
assembly is the one CPU tail (`groth16.prover.prove_finalize`, given the B2 MSM already computed).

Pure: no Django, safe in the proving pool. The pool is a `gpu_engine.engine.pools.ProcessPool`
(or anything with `submit(fn, *args) -> Future`); `preload_key(ref)` warms its children.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from py_arkworks_bls12381 import G1Point, G2Point

from gpu_engine.circom.api import CircuitRef, load
from gpu_engine.circom.prover import CircuitKey, CircuitWitness
from gpu_engine.groth16.field import R, fr_random
from gpu_engine.groth16.points import (
    g1_from_bytes_unchecked,
    g1_to_bytes,
    g2_from_bytes_unchecked,
    g2_to_bytes,
)
from gpu_engine.groth16.prover import DeviceOutput, PartitionProof, prove_finalize

G1_VECTORS = {"a": "a_g1_support", "b1": "b_g1_support", "c": "c_g1"}


def preload_key(ref: CircuitRef) -> None:
    """A pool `preload`: load the converted key before the first task."""
    load(ref)


def _to_bytes(p: Any) -> bytes:
    if p == G1Point.identity() or p == G2Point.identity():
        return b""  # the empty string stands for the point at infinity
    return g2_to_bytes(p) if isinstance(p, G2Point) else g1_to_bytes(p)


def msm_task(ref: CircuitRef, which: str, scalars: Sequence[int]) -> tuple[bytes, float]:
    """One of the key's MSMs in a child: A, B1, C (G1) or B2 (G2); (point bytes, ms)."""
    from gpu_engine.backends.cpu import CpuBackend

    key = load(ref)
    t0 = time.perf_counter()
    cpu = CpuBackend()
    point: G1Point | G2Point
    if which == "b2":
        point = cpu.msm_g2(key.b_g2_support, scalars)
    elif which in G1_VECTORS:
        point = cpu.msm_g1(getattr(key, G1_VECTORS[which]), scalars)
    else:
        raise ValueError(f"no MSM named {which!r}")
    return _to_bytes(point), (time.perf_counter() - t0) * 1000.0


def h_task(ref: CircuitRef, a: Sequence[int], b: Sequence[int]) -> tuple[bytes, float, float]:
    """H on the odd coset, then its MSM over the key's H points; (point bytes, NTT ms, MSM ms)."""
    from gpu_engine.backends.cpu import CpuBackend

    key = load(ref)
    cpu = CpuBackend()
    t0 = time.perf_counter()
    c = [x * y % R for x, y in zip(a, b)]
    h = cpu.compute_h_odd_coset(a, b, c)
    t1 = time.perf_counter()
    point = cpu.msm_g1(key.h_g1, h)
    return _to_bytes(point), (t1 - t0) * 1000.0, (time.perf_counter() - t1) * 1000.0


class _KnownG2:
    """The finalizer's backend seam with the B2 MSM already done elsewhere."""

    name = "cpu"

    def __init__(self, point: G2Point) -> None:
        self.point = point

    def msm_g2(self, points: Sequence[G2Point], scalars: Sequence[int], *, bases_key: str | None = None) -> G2Point:
        return self.point


def _g1(raw: bytes) -> G1Point:
    return g1_from_bytes_unchecked(raw) if raw else G1Point.identity()


def _g2(raw: bytes) -> G2Point:
    return g2_from_bytes_unchecked(raw) if raw else G2Point.identity()


def prove_parallel(ref: CircuitRef, key: CircuitKey, witness: CircuitWitness, pool: Any) -> PartitionProof:
    """The proof of one partition with its five parts as pool tasks (longest first)."""
    if ref.key_hash != key.key_hash:
        raise ValueError(f"the key and the circuit reference of {key.name} do not match")
    key.check_witness(witness)
    z = witness.assignment
    zb = [z[j] for j in key.b_support]
    t0 = time.perf_counter()
    futures = {
        "h": pool.submit(h_task, ref, witness.a, witness.b),
        "b2": pool.submit(msm_task, ref, "b2", zb),
        "a": pool.submit(msm_task, ref, "a", [z[j] for j in key.a_support]),
        "b1": pool.submit(msm_task, ref, "b1", zb),
        "c": pool.submit(msm_task, ref, "c", z[key.num_public + 1:]),
    }
    results = {name: f.result() for name, f in futures.items()}
    wall = (time.perf_counter() - t0) * 1000.0
    h_raw, ntt_ms, h_ms = results["h"]
    timings = {"ntt_ms": ntt_ms, "msm_h_ms": h_ms, "parallel_wall_ms": wall}
    for name in ("a", "b1", "c", "b2"):
        timings[f"msm_{name}_ms"] = results[name][1]
    timings["msm_g1_ms"] = h_ms + sum(results[n][1] for n in ("a", "b1", "c"))
    dev = DeviceOutput(index=witness.index, r=fr_random(), s=fr_random(), msm_a=_g1(results["a"][0]),
                       msm_b1=_g1(results["b1"][0]), msm_c=_g1(results["c"][0]) + _g1(h_raw), timings=timings)
    proof = prove_finalize(key, witness, dev, _KnownG2(_g2(results["b2"][0])))
    proof.timings.update(timings)
    proof.timings["msm_g2_ms"] = timings["msm_b2_ms"]
    return proof
