"""iden3's binary container (`.zkey`, `.wtns`, `.r1cs`), read strictly.

Layout: magic (4 bytes) | u32 version | u32 section count | per section: u32 type, u64 size,
body. Little-endian. Sections are found by type through the table (never by file position);
a section that appears twice, one of an unknown type, one that runs past the end of the file,
or bytes after the last section make the file unusable: a truncated or spliced file must be
refused with a message naming the section, never half-read into a wrong proof.
Pure Python without Django: pool children read these files.
"""
from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

from gpu_engine.groth16.field import R
from gpu_engine.groth16.points import Q

# BN254 (alt_bn128), the curve circom compiles for unless told otherwise.
BN254_Q = 21888242871839275222246405745257275088696311157297823662689037894645226208583
BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
BN254_ADVICE = ("it was made for BN254 (circom's default prime); this engine proves on BLS12-381: "
                "compile with `circom --prime bls12381` and run the powers of tau and the Groth16 setup "
                "on bls12381 (`snarkjs powersoftau new bls12381 ...`)")
MAX_SECTIONS = 64


class CircomFormatError(ValueError):
    """A circom/snarkjs file that must not be used; the message names the file kind and section."""


@dataclass(frozen=True)
class Section:
    type: int
    offset: int
    size: int


def check_prime(value: int, expected: int, bn254: int, where: str) -> None:
    """The field of a file: this engine's, or a refusal that says how to get a BLS12-381 file."""
    if value == expected:
        return
    if value == bn254:
        raise CircomFormatError(f"{where}: {BN254_ADVICE}")
    raise CircomFormatError(f"{where}: unsupported prime {value} (expected BLS12-381's "
                            f"{'base field q' if expected == Q else 'scalar field r'})")


class SectionReader:
    """Sequential little-endian reads inside one section; over-reads and leftovers are errors."""

    def __init__(self, data: memoryview, section: Section, where: str) -> None:
        self._data, self._pos, self._end = data, section.offset, section.offset + section.size
        self.where = where

    @property
    def remaining(self) -> int:
        return self._end - self._pos

    def take(self, n: int) -> memoryview:
        if n < 0 or n > self.remaining:
            raise CircomFormatError(f"{self.where}: truncated (needs {n} more bytes, {self.remaining} left)")
        out = self._data[self._pos:self._pos + n]
        self._pos += n
        return out

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack("<Q", self.take(8))[0]

    def int_le(self, n: int) -> int:
        return int.from_bytes(self.take(n), "little")

    def expect_size(self, size: int, what: str) -> None:
        """The section must hold exactly `size` more bytes (checked before reading arrays)."""
        if self.remaining != size:
            raise CircomFormatError(f"{self.where}: {self.remaining} bytes where {what} needs {size}")

    def done(self) -> None:
        if self.remaining:
            raise CircomFormatError(f"{self.where}: {self.remaining} unexpected bytes at the end")


class BinFile:
    """A parsed container: its version and its sections by type."""

    def __init__(self, data: bytes | bytearray | memoryview, *, magic: bytes, kind: str, versions: set[int],
                 names: Mapping[int, str], required: set[int]) -> None:
        self.data, self.kind, self.names = memoryview(data), kind, names
        if len(self.data) < 12:
            raise CircomFormatError(f"{kind}: {len(self.data)} bytes is too short for a {kind} file header")
        if bytes(self.data[:4]) != magic:
            raise CircomFormatError(f"{kind}: bad magic {bytes(self.data[:4])!r} (expected {magic!r}): "
                                    f"not a {kind} file")
        self.version, count = struct.unpack_from("<II", self.data, 4)
        if self.version not in versions:
            raise CircomFormatError(f"{kind}: version {self.version} is not supported "
                                    f"(supported: {', '.join(map(str, sorted(versions)))})")
        if count > MAX_SECTIONS:
            raise CircomFormatError(f"{kind}: header claims {count} sections (at most {MAX_SECTIONS} expected)")
        self.sections: dict[int, Section] = {}
        pos = 12
        for i in range(count):
            if pos + 12 > len(self.data):
                raise CircomFormatError(f"{kind}: truncated in the section table (entry {i + 1} of {count})")
            stype, size = struct.unpack_from("<IQ", self.data, pos)
            pos += 12
            label = self.label(stype)
            if stype not in names:
                raise CircomFormatError(f"{kind}: unknown section type {stype}")
            if stype in self.sections:
                raise CircomFormatError(f"{kind}: {label} appears twice")
            if size > len(self.data) - pos:
                raise CircomFormatError(f"{kind}: {label} is truncated (declares {size} bytes, "
                                        f"{len(self.data) - pos} left in the file)")
            self.sections[stype] = Section(stype, pos, size)
            pos += size
        if pos != len(self.data):
            raise CircomFormatError(f"{kind}: {len(self.data) - pos} bytes after the last section "
                                    "(oversized or spliced file)")
        for stype in sorted(required):
            if stype not in self.sections:
                raise CircomFormatError(f"{kind}: {self.label(stype)} is missing")

    def label(self, stype: int) -> str:
        name = self.names.get(stype)
        return f"section {stype} ({name})" if name else f"section {stype}"

    def has(self, stype: int) -> bool:
        return stype in self.sections

    def reader(self, stype: int) -> SectionReader:
        return SectionReader(self.data, self.sections[stype], f"{self.kind} {self.label(stype)}")


__all__ = ["BN254_ADVICE", "BN254_Q", "BN254_R", "BinFile", "CircomFormatError", "Q", "R", "SectionReader",
           "check_prime"]
