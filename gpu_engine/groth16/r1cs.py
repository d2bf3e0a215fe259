"""Rank-1 constraint systems and the builder that circuits are written against.

A circuit is ordinary Python run against a `ConstraintSystem`: it allocates variables
with their values and calls `enforce(a, b, c, name)` for <a,z> * <b,z> = <c,z>. The
same code serves witness synthesis (values checked as they are enforced, the first
unsatisfied constraint named) and, with `record=True`, the setup (the sparse matrices).
The variable vector is z = [1, public inputs..., private variables...].
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from gpu_engine.groth16.field import R

ONE = 0  # index of the constant-one variable


class UnsatisfiedConstraint(ValueError):
    """A witness that does not satisfy the circuit; names the constraint."""

    def __init__(self, index: int, name: str, a: int, b: int, c: int) -> None:
        super().__init__(f"constraint #{index} {name!r} is not satisfied: a*b = {a * b % R} but c = {c}")
        self.index = index
        self.name = name


class LC:
    """A sparse linear combination sum(coeff * z[var]) with canonical coefficients."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict[int, int] | None = None) -> None:
        self.terms: dict[int, int] = terms if terms is not None else {}

    @classmethod
    def var(cls, index: int) -> LC:
        return cls({index: 1})

    @classmethod
    def const(cls, value: int) -> LC:
        value %= R
        return cls({ONE: value} if value else {})

    def __add__(self, other: LC | int) -> LC:
        other = other if isinstance(other, LC) else LC.const(other)
        out = dict(self.terms)
        for k, v in other.terms.items():
            s = (out.get(k, 0) + v) % R
            if s:
                out[k] = s
            else:
                out.pop(k, None)
        return LC(out)

    __radd__ = __add__

    def __neg__(self) -> LC:
        return LC({k: (R - v) % R for k, v in self.terms.items()})

    def __sub__(self, other: LC | int) -> LC:
        other = other if isinstance(other, LC) else LC.const(other)
        return self + (-other)

    def __rsub__(self, other: int) -> LC:
        return LC.const(other) - self

    def scale(self, k: int) -> LC:
        k %= R
        return LC({i: v * k % R for i, v in self.terms.items()} if k else {})

    def evaluate(self, values: list[int]) -> int:
        return sum(v * values[i] for i, v in self.terms.items()) % R

    def sorted_terms(self) -> tuple[tuple[int, int], ...]:
        return tuple(sorted(self.terms.items()))


ZERO = LC()


@dataclass(frozen=True)
class R1CSMatrices:
    """The circuit's shape: what the setup needs, independent of any witness."""

    num_public: int  # public inputs, not counting the constant one
    num_vars: int    # len(z), the constant one included
    constraints: tuple[tuple[tuple[tuple[int, int], ...], ...], ...]  # per constraint: (A, B, C) terms

    @property
    def num_constraints(self) -> int:
        return len(self.constraints)

    def digest(self, label: str) -> str:
        """A hash of the shape (and `label`): the parameter cache key."""
        h = hashlib.sha256(f"{label}|{self.num_public}|{self.num_vars}|{len(self.constraints)}\n".encode())
        for abc in self.constraints:
            h.update(repr(abc).encode())
        return h.hexdigest()


class ConstraintSystem:
    """Allocates variables (public first), enforces constraints, checks them as it goes."""

    def __init__(self, *, record: bool = False) -> None:
        self.values: list[int] = [1]
        self.num_public = 0
        self._private_started = False
        self.record = record
        self.constraints: list[tuple] = []
        self.a: list[int] = []
        self.b: list[int] = []
        self.c: list[int] = []
        self._finished = False

    def alloc_public(self, value: int) -> LC:
        if self._private_started:
            raise RuntimeError("public inputs must be allocated before private variables")
        self.values.append(value % R)
        self.num_public += 1
        return LC.var(len(self.values) - 1)

    def alloc(self, value: int) -> LC:
        self._private_started = True
        self.values.append(value % R)
        return LC.var(len(self.values) - 1)

    def value(self, lc: LC) -> int:
        return lc.evaluate(self.values)

    def enforce(self, a: LC, b: LC, c: LC, name: str) -> None:
        """Require <a,z> * <b,z> = <c,z>; raise UnsatisfiedConstraint naming it otherwise."""
        if self._finished:
            raise RuntimeError("constraint system already finished")
        va, vb, vc = a.evaluate(self.values), b.evaluate(self.values), c.evaluate(self.values)
        if va * vb % R != vc:
            raise UnsatisfiedConstraint(len(self.a), name, va, vb, vc)
        self.a.append(va)
        self.b.append(vb)
        self.c.append(vc)
        if self.record:
            self.constraints.append((a.sorted_terms(), b.sorted_terms(), c.sorted_terms()))

    def finish(self) -> None:
        """Bind every input (the one included) with z_j * 0 = 0, so that the input parts of the
        A polynomials are linearly independent (what makes Groth16 sound for public inputs)."""
        for j in range(self.num_public + 1):
            self.enforce(LC.var(j), ZERO, ZERO, f"input {j}")
        self._finished = True

    @property
    def public_inputs(self) -> list[int]:
        return self.values[1:1 + self.num_public]

    def matrices(self) -> R1CSMatrices:
        if not self.record:
            raise RuntimeError("matrices are only kept by a ConstraintSystem(record=True)")
        return R1CSMatrices(self.num_public, len(self.values), tuple(self.constraints))
