"""A circuit's input signals listed from its .sym and wasm, and inputs checked against them at
submission with the witness calculator's own rules."""
from __future__ import annotations

import shutil

import pytest

from gpu_engine.circom.inputs import WitnessError, WitnessInputError
from gpu_engine.circom.signals import default_sym_path, input_signals, validate_inputs
from gpu_engine.groth16.field import R


def test_inputs_listed_with_sizes_in_wire_order(multiplier_circuit, multi_public_circuit, poseidon_circuit):
    assert input_signals(multi_public_circuit.wasm) == {"x": 3, "k": 1, "secret": 1}
    assert input_signals(multiplier_circuit.wasm) == {"b": 1, "a": 1}  # public first
    assert input_signals(poseidon_circuit.wasm, poseidon_circuit.sym) == {"domain": 1, "preimage": 2}
    assert default_sym_path(poseidon_circuit.wasm) == poseidon_circuit.sym


def test_missing_sym_is_explained(multiplier_circuit, tmp_path):
    wasm = tmp_path / "m.wasm"
    shutil.copy(multiplier_circuit.wasm, wasm)
    with pytest.raises(WitnessError, match=r"need its \.sym file"):
        input_signals(wasm)


def test_sym_of_another_circuit_is_refused(multiplier_circuit, poseidon_circuit):
    with pytest.raises(WitnessError, match="not from the same compilation"):
        input_signals(multiplier_circuit.wasm, poseidon_circuit.sym)


def test_malformed_sym_is_refused(multiplier_circuit, tmp_path):
    sym = tmp_path / "bad.sym"
    sym.write_text("1,1,0,main.a\nnot a sym line\n")
    with pytest.raises(WitnessError, match="line 2: not a circom .sym line"):
        input_signals(multiplier_circuit.wasm, sym)


SIGNALS = {"x": 3, "k": 1, "secret": 1}


def test_valid_input_is_flattened_and_reduced():
    flat = validate_inputs(SIGNALS, {"x": [[1, "2"], ["-1"]], "k": "0x10", "secret": str(R + 1)}, R)
    assert flat == {"x": [1, 2, R - 1], "k": [16], "secret": [1]}


@pytest.mark.parametrize("inputs, match, signal", [
    ({"x": [1, 2, 3], "k": 1}, "missing input signal 'secret'", "secret"),
    ({"x": [1, 2, 3]}, "missing input signals 'k', 'secret'", "k"),
    ({"x": [1, 2, 3], "k": 1, "secret": 1, "extra": 1}, r"unknown input signal 'extra' \(the circuit's inputs: x, k, secret\)", "extra"),
    ({"x": [1, 2], "k": 1, "secret": 1}, "'x' takes 3 value", "x"),
    ({"x": [1, 2, 3], "k": "abc", "secret": 1}, "'k': 'abc' is not a number", "k"),
    ({"x": [1, 2, 3], "k": 2.5, "secret": 1}, "float is not an integer", "k"),
])
def test_bad_input_names_the_signal(inputs, match, signal):
    with pytest.raises(WitnessInputError, match=match) as err:
        validate_inputs(SIGNALS, inputs, R)
    assert err.value.signal == signal
