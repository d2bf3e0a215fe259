"""circom's constraint file (`.r1cs`, version 1), read strictly: the C matrix the zkey lacks.

A zkey keeps only A and B (snarkjs computes C's evaluations as a*b), so a witness that does
not satisfy the circuit would silently give an invalid proof. With the r1cs registered, every
witness is checked against every constraint before device work (`check_witness`).
Section 1 header: u32 n8, prime, u32 nWires, nPubOut, nPubIn, nPrvIn, u64 nLabels, u32
nConstraints; section 2: per constraint A, B, C, each u32 nTerms then (u32 wire, n8 value)
terms, canonical little-endian; section 3: the wire -> label map (u64 per wire).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gpu_engine.circom.binfile import BN254_R, BinFile, CircomFormatError, check_prime
from gpu_engine.groth16.field import R

MAGIC = b"r1cs"
SECTIONS = {1: "header", 2: "constraints", 3: "wire to label map", 4: "custom gates list",
            5: "custom gates applications"}
FR_BYTES = 32

Term = tuple[int, int]  # (wire, coefficient)


class UnsatisfiedWitness(ValueError):
    """A witness that breaks a constraint (the partition fails with this message)."""


@dataclass
class R1cs:
    num_wires: int
    num_outputs: int
    num_public_inputs: int
    num_private_inputs: int
    num_labels: int
    constraints: list[tuple[list[Term], list[Term], list[Term]]] = field(repr=False)

    @property
    def num_public(self) -> int:
        return self.num_outputs + self.num_public_inputs

    @property
    def num_constraints(self) -> int:
        return len(self.constraints)


def read_r1cs(data: bytes | memoryview) -> R1cs:
    f = BinFile(data, magic=MAGIC, kind="r1cs", versions={1}, names=SECTIONS, required={1, 2})
    for custom in (4, 5):
        if f.has(custom):
            raise CircomFormatError(f"r1cs: {f.label(custom)}: custom gates are PLONK-only; not a Groth16 circuit")
    rd = f.reader(1)
    n8 = rd.u32()
    if n8 != FR_BYTES:
        raise CircomFormatError(f"{rd.where}: field elements of {n8} bytes (BLS12-381's Fr has {FR_BYTES})")
    check_prime(rd.int_le(n8), R, BN254_R, rd.where)
    n_wires, n_out, n_pub, n_prv = rd.u32(), rd.u32(), rd.u32(), rd.u32()
    n_labels, n_constraints = rd.u64(), rd.u32()
    rd.done()
    if n_wires < 1 + n_out + n_pub + n_prv:
        raise CircomFormatError(f"{rd.where}: {n_wires} wires cannot hold the constant and "
                                f"{n_out + n_pub + n_prv} inputs and outputs")
    cs = f.reader(2)
    step = 4 + n8
    constraints = []
    for k in range(n_constraints):
        lcs = []
        for _ in range(3):
            n_terms = cs.u32()
            raw = cs.take(n_terms * step)
            terms = []
            for t in range(n_terms):
                wire = int.from_bytes(raw[t * step:t * step + 4], "little")
                value = int.from_bytes(raw[t * step + 4:(t + 1) * step], "little")
                if wire >= n_wires or value >= R:
                    raise CircomFormatError(f"{cs.where}: constraint {k} has a term outside the "
                                            f"{n_wires} wires or the field")
                terms.append((wire, value))
            lcs.append(terms)
        constraints.append((lcs[0], lcs[1], lcs[2]))
    cs.done()
    if f.has(3):
        f.reader(3).expect_size(8 * n_wires, f"{n_wires} labels")
    return R1cs(n_wires, n_out, n_pub, n_prv, n_labels, constraints)


def _dot(lc: list[Term], w: list[int]) -> int:
    return sum(c * w[i] for i, c in lc) % R


def check_witness(r1cs: R1cs, witness: list[int]) -> None:
    """UnsatisfiedWitness naming the first broken constraint (or a wrong length)."""
    if len(witness) != r1cs.num_wires:
        raise UnsatisfiedWitness(f"the witness has {len(witness)} values, the circuit {r1cs.num_wires} wires")
    for k, (a, b, c) in enumerate(r1cs.constraints):
        if _dot(a, witness) * _dot(b, witness) % R != _dot(c, witness):
            raise UnsatisfiedWitness(f"the witness does not satisfy constraint {k} of {r1cs.num_constraints}")


def check_rows(r1cs: R1cs, a: list[int], b: list[int], witness: list[int]) -> None:
    """The same check with A.w and B.w already computed per row (the prover's row evaluations, from
    the zkey's coefficients, which registration proved equal to the r1cs's A and B): only C.w is
    computed here, a third of `check_witness`'s work."""
    if len(witness) != r1cs.num_wires:
        raise UnsatisfiedWitness(f"the witness has {len(witness)} values, the circuit {r1cs.num_wires} wires")
    for k, (_, _, c) in enumerate(r1cs.constraints):
        if a[k] * b[k] % R != _dot(c, witness):
            raise UnsatisfiedWitness(f"the witness does not satisfy constraint {k} of {r1cs.num_constraints}")


def same_ab(r1cs: R1cs, a_coeffs: list[tuple[int, int, int]], b_coeffs: list[tuple[int, int, int]]) -> str | None:
    """None when the zkey's A and B (constraint rows) are the r1cs's, else what differs."""
    for name, index, coeffs in (("A", 0, a_coeffs), ("B", 1, b_coeffs)):
        ours: dict[tuple[int, int], int] = {}
        for row, sig, v in coeffs:
            if row < r1cs.num_constraints:
                ours[(row, sig)] = (ours.get((row, sig), 0) + v) % R
        theirs: dict[tuple[int, int], int] = {}
        for k, lcs in enumerate(r1cs.constraints):
            for sig, v in lcs[index]:
                theirs[(k, sig)] = (theirs.get((k, sig), 0) + v) % R
        ours = {k: v for k, v in ours.items() if v}
        theirs = {k: v for k, v in theirs.items() if v}
        if ours != theirs:
            row = min(key[0] for key, _ in set(ours.items()) ^ set(theirs.items()))
            return f"matrix {name} differs from the zkey's in constraint {row}"
    return None
