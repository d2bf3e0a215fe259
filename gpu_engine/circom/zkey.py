"""snarkjs's Groth16 `.zkey` (version 1), read strictly into canonical ints and checked points.

Sections (docs/CIRCOM.md has the byte layout): 1 protocol (1 = Groth16); 2 header: n8q, q, n8r,
r, nVars, nPublic, domainSize, alpha1, beta1, beta2, gamma2, delta1, delta2; 3 IC (nPublic + 1
G1); 4 coefficients of A and B (u32 count; per entry u32 matrix, u32 row, u32 signal, 32-byte
value); 5 A, 6 B1 (nVars G1), 7 B2 (nVars G2); 8 C (nVars - nPublic - 1 G1); 9 H (domainSize
G1); 10 the setup's contributions (not needed to prove; not read).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from py_arkworks_bls12381 import G1Point, G2Point

from gpu_engine.circom.binfile import BN254_Q, BN254_R, BinFile, CircomFormatError, check_prime
from gpu_engine.circom.points import (
    FQ_BYTES,
    FR_BYTES,
    coef_from_zkey,
    read_g1,
    read_g1_vector,
    read_g2,
    read_g2_vector,
)
from gpu_engine.groth16.field import TWO_ADICITY, R
from gpu_engine.groth16.points import Q

MAGIC = b"zkey"
SECTIONS = {1: "protocol", 2: "Groth16 header", 3: "IC", 4: "coefficients", 5: "A points", 6: "B1 points",
            7: "B2 points", 8: "C points", 9: "H points", 10: "contributions"}
GROTH16 = 1
_COEF_ENTRY = 12 + FR_BYTES


@dataclass
class ZkeyHeader:
    num_vars: int        # wires, the constant 1 included
    num_public: int      # outputs + public inputs (the constant not counted)
    domain_size: int
    num_constraints: int  # rows of the circuit proper (the public-input rows not counted)
    num_coefficients: int


@dataclass
class Zkey:
    """Everything a proof needs, in this engine's forms (canonical ints, arkworks points)."""

    header: ZkeyHeader
    alpha_g1: G1Point
    beta_g1: G1Point
    beta_g2: G2Point
    gamma_g2: G2Point
    delta_g1: G1Point
    delta_g2: G2Point
    ic: list[G1Point]
    a_g1: list[G1Point]
    b_g1: list[G1Point]
    b_g2: list[G2Point]
    c_g1: list[G1Point]
    h_g1: list[G1Point]
    # A and B as sparse (row, signal, value) triples, canonical values
    a_coeffs: list[tuple[int, int, int]] = field(repr=False)
    b_coeffs: list[tuple[int, int, int]] = field(repr=False)


def _container(data: bytes | memoryview) -> BinFile:
    return BinFile(data, magic=MAGIC, kind="zkey", versions={1}, names=SECTIONS, required=set(range(1, 10)))


def _protocol(f: BinFile) -> None:
    rd = f.reader(1)
    rd.expect_size(4, "the protocol id")
    proto = rd.u32()
    if proto != GROTH16:
        name = {2: "PLONK", 10: "FFLONK"}.get(proto, f"protocol {proto}")
        raise CircomFormatError(f"{rd.where}: the key is for {name}, not Groth16")


def read_header(data: bytes | memoryview) -> tuple[BinFile, ZkeyHeader, list]:
    """The container, the header numbers and the header points (alpha1, beta1, beta2, gamma2,
    delta1, delta2), with the curve and every size checked."""
    f = _container(data)
    _protocol(f)
    rd = f.reader(2)
    n8q = rd.u32()
    if n8q not in (32, FQ_BYTES):
        raise CircomFormatError(f"{rd.where}: base field elements of {n8q} bytes (BLS12-381 has {FQ_BYTES})")
    check_prime(rd.int_le(n8q), Q, BN254_Q, rd.where)
    n8r = rd.u32()
    if n8r != FR_BYTES:
        raise CircomFormatError(f"{rd.where}: scalar field elements of {n8r} bytes (expected {FR_BYTES})")
    check_prime(rd.int_le(n8r), R, BN254_R, rd.where)
    num_vars, num_public, domain_size = rd.u32(), rd.u32(), rd.u32()
    rd.expect_size(3 * 2 * FQ_BYTES + 3 * 4 * FQ_BYTES, "the six header points")
    pts = [read_g1(rd, 0), read_g1(rd, 1), read_g2(rd, 2), read_g2(rd, 3), read_g1(rd, 4), read_g2(rd, 5)]
    if num_vars < 1 or num_public >= num_vars:
        raise CircomFormatError(f"{rd.where}: {num_public} public signals for {num_vars} variables")
    if domain_size < 1 or domain_size & (domain_size - 1) or domain_size.bit_length() - 1 > TWO_ADICITY:
        raise CircomFormatError(f"{rd.where}: domain size {domain_size} is not a power of two up to 2^{TWO_ADICITY}")
    if domain_size < num_public + 1:
        raise CircomFormatError(f"{rd.where}: domain size {domain_size} cannot hold {num_public + 1} public rows")
    coef = f.reader(4)
    if coef.remaining < 4:
        raise CircomFormatError(f"{coef.where}: truncated (no coefficient count)")
    count = coef.u32()
    header = ZkeyHeader(num_vars, num_public, domain_size, 0, count)
    return f, header, pts


def _coefficients(f: BinFile, h: ZkeyHeader) -> tuple[list, list, int]:
    rd = f.reader(4)
    count = rd.u32()
    rd.expect_size(count * _COEF_ENTRY, f"{count} coefficients")
    raw = rd.take(count * _COEF_ENTRY)
    mats: tuple[list, list] = ([], [])
    max_a_row = -1
    for i in range(count):
        e = raw[i * _COEF_ENTRY:(i + 1) * _COEF_ENTRY]
        matrix, row, signal = (int.from_bytes(e[k:k + 4], "little") for k in (0, 4, 8))
        stored = int.from_bytes(e[12:], "little")
        if matrix > 1:
            raise CircomFormatError(f"{rd.where}: coefficient {i} names matrix {matrix} (only 0 = A, 1 = B)")
        if row >= h.domain_size:
            raise CircomFormatError(f"{rd.where}: coefficient {i} is in row {row}, past the domain ({h.domain_size})")
        if signal >= h.num_vars:
            raise CircomFormatError(f"{rd.where}: coefficient {i} names signal {signal} of {h.num_vars}")
        if stored >= R:
            raise CircomFormatError(f"{rd.where}: coefficient {i} is not an element of Fr")
        mats[matrix].append((row, signal, coef_from_zkey(stored)))
        if matrix == 0:
            max_a_row = max(max_a_row, row)
    # snarkjs adds one A row per public signal (the constant one first) after the constraints.
    num_constraints = max_a_row - h.num_public
    public_rows = {(row, sig) for row, sig, v in mats[0] if row >= num_constraints and v == 1}
    if num_constraints < 0 or any((num_constraints + s, s) not in public_rows for s in range(h.num_public + 1)):
        raise CircomFormatError(f"{rd.where}: the rows binding the public signals are missing or malformed")
    return mats[0], mats[1], num_constraints


def read_zkey(data: bytes | memoryview) -> Zkey:
    """Parse and check a whole Groth16 zkey (every point checked); CircomFormatError names the problem."""
    f, h, (alpha1, beta1, beta2, gamma2, delta1, delta2) = read_header(data)
    a_coeffs, b_coeffs, h.num_constraints = _coefficients(f, h)
    n_priv = h.num_vars - h.num_public - 1
    vec = {}
    for stype, count, what in ((3, h.num_public + 1, "IC"), (5, h.num_vars, "A"), (6, h.num_vars, "B1"),
                               (8, n_priv, "C"), (9, h.domain_size, "H")):
        rd = f.reader(stype)
        vec[stype] = read_g1_vector(rd, count, what)
    b2 = read_g2_vector(f.reader(7), h.num_vars, "B2")
    return Zkey(h, alpha1, beta1, beta2, gamma2, delta1, delta2, ic=vec[3], a_g1=vec[5], b_g1=vec[6], b_g2=b2,
                c_g1=vec[8], h_g1=vec[9], a_coeffs=a_coeffs, b_coeffs=b_coeffs)
