"""Fuzzed zkey, wtns and r1cs files: truncated, bit-flipped, oversized or spliced, every one is
either refused with CircomFormatError (naming the file kind) or read; nothing else escapes."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_engine.circom.binfile import CircomFormatError
from gpu_engine.circom.r1cs import read_r1cs
from gpu_engine.circom.wtns import read_wtns
from gpu_engine.circom.zkey import read_zkey
from tests.circom import tools

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="session")
def files(multiplier_circuit, tmp_path_factory) -> dict[str, bytes]:
    wtns = tools.wtns_calculate(multiplier_circuit, multiplier_circuit.sample_input(),
                                tmp_path_factory.mktemp("fuzz") / "w.wtns")
    return {"zkey": multiplier_circuit.zkey.read_bytes(), "wtns": wtns.read_bytes(),
            "r1cs": multiplier_circuit.r1cs.read_bytes()}


READERS = {"zkey": read_zkey, "wtns": read_wtns, "r1cs": read_r1cs}


def _read_or_refuse(kind: str, raw: bytes) -> bool:
    """True when read, False when refused with a message naming the file kind."""
    try:
        READERS[kind](raw)
    except CircomFormatError as exc:
        assert str(exc).startswith(kind), exc
        return False
    return True


@pytest.mark.parametrize("kind", list(READERS))
def test_every_truncation_is_refused(files, kind):
    raw = files[kind]
    step = max(1, len(raw) // 400)
    for cut in list(range(0, len(raw), step)) + [len(raw) - 1]:
        assert not _read_or_refuse(kind, raw[:cut]), f"{kind} cut at {cut} of {len(raw)} was read"


@pytest.mark.parametrize("kind", list(READERS))
def test_oversized_is_refused(files, kind):
    assert not _read_or_refuse(kind, files[kind] + b"\x00" * 7)
    assert not _read_or_refuse(kind, files[kind] + files[kind])


@pytest.mark.parametrize("kind", list(READERS))
@FUZZ
@given(data=st.data())
def test_bit_flips_never_crash(files, kind, data):
    raw = bytearray(files[kind])
    for _ in range(data.draw(st.integers(1, 3))):
        bit = data.draw(st.integers(0, 8 * len(raw) - 1))
        raw[bit // 8] ^= 1 << (bit % 8)
    _read_or_refuse(kind, bytes(raw))


@pytest.mark.parametrize("kind", list(READERS))
def test_header_bit_flips_are_refused(files, kind):
    """Flips in the magic, version, section count and first table entry are always caught."""
    raw = files[kind]
    for bit in range(8 * 24):
        flipped = bytearray(raw)
        flipped[bit // 8] ^= 1 << (bit % 8)
        assert not _read_or_refuse(kind, bytes(flipped)), f"{kind}: flip of bit {bit} was read"


@FUZZ
@given(junk=st.binary(max_size=256))
def test_random_bytes_are_refused(junk):
    for kind in READERS:
        assert not _read_or_refuse(kind, junk)
