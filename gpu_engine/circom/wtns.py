"""circom's witness file (`.wtns`, version 2), read strictly.

Section 1: u32 n8, the prime (n8 bytes), u32 count; section 2: count values of n8 bytes,
little-endian canonical. Wire order: the constant 1, outputs, public inputs, private inputs,
internal signals (the r1cs numbering the zkey was made for).
"""
from __future__ import annotations

import struct

from gpu_engine.circom.binfile import BN254_R, BinFile, CircomFormatError, check_prime
from gpu_engine.groth16.field import R

MAGIC = b"wtns"
SECTIONS = {1: "header", 2: "values"}
FR_BYTES = 32
MAX_WITNESS = 1 << 28


def read_wtns(data: bytes | memoryview, *, expected_count: int | None = None) -> list[int]:
    """The witness values; `expected_count` (the circuit's wires) is checked when given."""
    f = BinFile(data, magic=MAGIC, kind="wtns", versions={2}, names=SECTIONS, required={1, 2})
    rd = f.reader(1)
    n8 = rd.u32()
    if n8 not in (FR_BYTES,):
        raise CircomFormatError(f"{rd.where}: field elements of {n8} bytes (BLS12-381's Fr has {FR_BYTES})")
    check_prime(rd.int_le(n8), R, BN254_R, rd.where)
    count = rd.u32()
    rd.done()
    if count < 1 or count > MAX_WITNESS:
        raise CircomFormatError(f"{rd.where}: {count} values is not a witness size")
    if expected_count is not None and count != expected_count:
        raise CircomFormatError(f"{rd.where}: {count} values, the circuit has {expected_count} wires")
    vals = f.reader(2)
    vals.expect_size(count * n8, f"{count} values")
    raw = vals.take(count * n8)
    out = [int.from_bytes(raw[i * n8:(i + 1) * n8], "little") for i in range(count)]
    for i, v in enumerate(out):
        if v >= R:
            raise CircomFormatError(f"{vals.where}: value {i} is not an element of Fr")
    if out[0] != 1:
        raise CircomFormatError(f"{vals.where}: value 0 must be the constant 1, is {out[0]}")
    return out


def write_wtns(values: list[int]) -> bytes:
    """The same file snarkjs writes for these values (tests and exports)."""
    body1 = struct.pack("<I", FR_BYTES) + R.to_bytes(FR_BYTES, "little") + struct.pack("<I", len(values))
    body2 = b"".join(v.to_bytes(FR_BYTES, "little") for v in values)
    out = MAGIC + struct.pack("<II", 2, 2)
    for stype, body in ((1, body1), (2, body2)):
        out += struct.pack("<IQ", stype, len(body)) + body
    return out
