"""Bad inputs to the witness calculator are refused with a message naming the signal; an input the
circuit's assertions reject gives circom's own message (the one snarkjs prints)."""
from __future__ import annotations

import pytest

from gpu_engine.circom.witness import (
    WitnessAssertionError,
    WitnessCalculator,
    WitnessError,
    WitnessInputError,
    fnv64,
)
from tests.circom import tools

GOOD = {"x": ["1", "2", "3"], "k": "7", "secret": "5"}


@pytest.fixture
def calc(multi_public_circuit) -> WitnessCalculator:
    return WitnessCalculator(multi_public_circuit.wasm)


def test_unsatisfiable_input_gives_circoms_message(calc, multi_public_circuit, tmp_path):
    bad = dict(GOOD, secret="0")
    with pytest.raises(WitnessAssertionError) as err:
        calc.calculate(bad)
    assert err.value.message.startswith("Assert Failed.")
    assert "Error in template NonZero_0 line: 9" in err.value.message
    with pytest.raises(tools.ToolError) as theirs:
        tools.wtns_calculate(multi_public_circuit, bad, tmp_path / "bad.wtns")
    assert err.value.message in str(theirs.value)  # snarkjs reports the same lines
    assert calc.calculate(GOOD)[1] == 42  # and the calculator still works


@pytest.mark.parametrize("inputs, match", [
    (dict(GOOD, kk="1"), "unknown input signal 'kk'"),
    (dict(GOOD, total="1"), "unknown input signal 'total'"),  # an output is not an input
    (dict(GOOD, x=["1", "2"]), "'x' takes 3 value"),
    (dict(GOOD, x=["1", "2", "3", "4"]), "'x' takes 3 value"),
    (dict(GOOD, k=["1", "2"]), "'k' takes 1 value"),
    ({"x": ["1", "2", "3"], "secret": "1"}, "only 4 of the circuit's 5"),
    (dict(GOOD, k="seven"), "'k': 'seven' is not a number"),
    (dict(GOOD, k="1.5"), "'k': '1.5' is not a number"),
    (dict(GOOD, k=""), "'k': '' is not a number"),
    (dict(GOOD, k="-0x5"), "not a number"),
    (dict(GOOD, k=1.0), "'k': float is not an integer"),
    (dict(GOOD, k=True), "'k': a boolean is not an integer"),
    (dict(GOOD, k=None), "'k': NoneType is not an integer"),
    (dict(GOOD, k="9" * 500), "too long"),
    (dict(GOOD, x=["1", {"a": "2"}, "3"]), "not an integer|mixes"),
    (["1", "2"], "JSON object of signals"),
])
def test_bad_inputs_are_refused_with_the_signal(calc, inputs, match):
    with pytest.raises(WitnessInputError, match=match):
        calc.calculate(inputs)


def test_input_error_carries_the_signal(calc):
    with pytest.raises(WitnessInputError) as err:
        calc.calculate(dict(GOOD, k="nope"))
    assert err.value.signal == "k"
    assert isinstance(err.value, ValueError)


def test_not_a_witness_calculator(tmp_path):
    with pytest.raises(WitnessError, match="not a WebAssembly module"):
        WitnessCalculator(b"\0asm\x01\0\0\0garbage")
    with pytest.raises(WitnessError, match="not a WebAssembly module"):
        WitnessCalculator(b"hello")
    empty_module = b"\0asm\x01\0\0\0"
    with pytest.raises(WitnessError, match="not a circom 2 witness calculator"):
        WitnessCalculator(empty_module)


def test_fnv_hash_is_circoms():
    # values from circom's fnvHash (witness_calculator.js) run in node
    assert f"{fnv64('a'):016x}" == "af63dc4c8601ec8c"
    assert f"{fnv64(''):016x}" == "cbf29ce484222325"
    assert f"{fnv64('main.x'):016x}" == "aa4c4273e9994dde"
    assert f"{fnv64('é€'):016x}" == "0a897607b702f698"  # UTF-16 code units, not bytes
