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
        """Radix-2 NTT over Fr on the subgroup of size len(values) (a power of two).

        Conventions of `groth16.field` (the reference is `field.reference_ntt`): forward is
        out[i] = sum_j v[j] * w**(i*j) with w = field.root_of_unity(n); `coset` evaluates at
        field.COSET_GENERATOR * w**i; the inverses undo both exactly (1/n included)."""

    def compute_h(self, a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
        """Coefficients of H = (A*B - C) / Z from evaluations on the domain: the 7 NTTs.

        Returns len(a) coefficients; the top one is 0 exactly when a*b = c on the domain
        (the prover checks it). Reference: `field.reference_compute_h`."""

    def compute_h_odd_coset(self, a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
        """snarkjs's H for circom keys: a*b - c evaluated on the odd coset of the double domain.

        With ffjavascript's roots (`field.ffjs_root_of_unity`): each of a, b, c is interpolated
        (inverse NTT of size n, 1/n included), coefficient i is multiplied by w_2n**i, and it
        is evaluated again (NTT of size n): six NTTs; then h_i = a_i*b_i - c_i, no division
        (Z is the constant -2 there and the zkey's H points carry it). Returns len(a) values.
        Reference: `field.reference_h_odd_coset`; docs/CIRCOM.md explains the form."""

    def msm_g1(self, points: Sequence[G1Point], scalars: Sequence[int], *, bases_key: str | None = None) -> G1Point:
        ...

    def msm_g2(self, points: Sequence[G2Point], scalars: Sequence[int], *, bases_key: str | None = None) -> G2Point:
        ...

    def close(self) -> None:
        """Release device resources; called from the thread that used the backend."""
