"""The CPU backend: NTTs with gmpy2 (`groth16.ntt`), MSMs with arkworks' Pippenger.

It holds no state, so one instance may be shared by threads; arkworks releases
nothing of the GIL it does not own, so MSMs on several threads still serialize.
"""
from __future__ import annotations

from collections.abc import Sequence

from py_arkworks_bls12381 import G1Point, G2Point

from gpu_engine.groth16 import ntt as _ntt
from gpu_engine.groth16.points import scalars_to_arkworks


class CpuBackend:
    """Backend protocol on the CPU (see `backends.base.Backend`)."""

    name = "cpu"

    def ntt(self, values: Sequence[int], *, inverse: bool = False, coset: bool = False) -> list[int]:
        return _ntt.ntt(values, inverse=inverse, coset=coset)

    def compute_h(self, a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
        return _ntt.compute_h(a, b, c)

    def compute_h_odd_coset(self, a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
        return _ntt.compute_h_odd_coset(a, b, c)

    def msm_g1(self, points: Sequence[G1Point], scalars: Sequence[int], *, bases_key: str | None = None) -> G1Point:
        _check_lengths(points, scalars)
        if not points:
            return G1Point.identity()
        return G1Point.multiexp_unchecked(list(points), scalars_to_arkworks(scalars))

    def msm_g2(self, points: Sequence[G2Point], scalars: Sequence[int], *, bases_key: str | None = None) -> G2Point:
        _check_lengths(points, scalars)
        if not points:
            return G2Point.identity()
        return G2Point.multiexp_unchecked(list(points), scalars_to_arkworks(scalars))

    def close(self) -> None:
        """Nothing to release on the CPU."""


def _check_lengths(points: Sequence, scalars: Sequence[int]) -> None:
    if len(points) != len(scalars):
        raise ValueError(f"MSM needs as many scalars as points, got {len(scalars)} scalars for {len(points)} points")
