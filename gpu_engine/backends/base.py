"""The backend seam: the prover asks a backend for the NTT family and the MSMs.

Scalars cross the seam as Python ints in canonical form (0 <= x < r). Points are
py_arkworks_bls12381 G1Point / G2Point. A backend may cache device copies of fixed bases
keyed by `bases_key` (proving-key vectors are reused for every partition of a shape).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from py_arkworks_bls12381 import G1Point, G2Point


@runtime_checkable
class Backend(Protocol):
    name: str

    def ntt(self, values: Sequence[int], *, inverse: bool = False, coset: bool = False) -> list[int]:
        """Radix-2 NTT over Fr on the subgroup of size len(values) (a power of two)."""

    def compute_h(self, a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
        """Coefficients of H = (A*B - C) / Z from evaluations on the domain: the 7 NTTs."""

    def msm_g1(self, points: Sequence[G1Point], scalars: Sequence[int], *, bases_key: str | None = None) -> G1Point:
        ...

    def msm_g2(self, points: Sequence[G2Point], scalars: Sequence[int], *, bases_key: str | None = None) -> G2Point:
        ...

    def close(self) -> None:
        """Release device resources; called from the thread that used the backend."""
