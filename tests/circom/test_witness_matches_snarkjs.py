"""The engine's witness calculator (circom's wasm in wasmtime) gives byte for byte the .wtns that
`snarkjs wtns calculate` writes, for every fixture circuit and for inputs in every accepted form."""
from __future__ import annotations

import random

from gpu_engine.circom.witness import WitnessCalculator, calculate_witness, wtns_bytes
from gpu_engine.groth16.field import R
from tests.circom import tools


def _snarkjs_wtns(circuit, inputs, path):
    return tools.wtns_calculate(circuit, inputs, path).read_bytes()


def test_sample_inputs_byte_for_byte(any_circuit, tmp_path):
    inputs = any_circuit.sample_input()
    ours = WitnessCalculator(any_circuit.wasm).calculate_wtns(inputs)
    assert ours == _snarkjs_wtns(any_circuit, inputs, tmp_path / "s.wtns")


def test_values_agree_with_the_wtns_body(any_circuit):
    inputs = any_circuit.sample_input()
    calc = WitnessCalculator(any_circuit.wasm)
    values = calc.calculate(inputs)
    assert values[0] == 1 and len(values) == calc.witness_size == any_circuit.info["wires"]
    assert all(0 <= v < R for v in values)
    assert wtns_bytes(values, calc.prime) == calc.calculate_wtns(inputs)
    assert calculate_witness(any_circuit.wasm, inputs) == values


def test_random_inputs_byte_for_byte(poseidon_circuit, multiplier_circuit, tmp_path):
    rng = random.Random(5)
    for i in range(3):
        inputs = {"preimage": [str(rng.randrange(R)), rng.randrange(2**52)], "domain": str(rng.randrange(R))}
        ours = WitnessCalculator(poseidon_circuit.wasm).calculate_wtns(inputs)
        assert ours == _snarkjs_wtns(poseidon_circuit, inputs, tmp_path / f"p{i}.wtns")
    inputs = {"a": str(rng.randrange(R)), "b": str(rng.randrange(R))}
    ours = WitnessCalculator(multiplier_circuit.wasm).calculate_wtns(inputs)
    assert ours == _snarkjs_wtns(multiplier_circuit, inputs, tmp_path / "m.wtns")


def test_large_integers_are_exact_where_javascript_rounds(multiplier_circuit):
    """A JSON number beyond 2^53 is rounded by node's JSON reader; here it stays exact (as a string
    would be there)."""
    calc = WitnessCalculator(multiplier_circuit.wasm)
    assert calc.calculate({"a": 2**60 + 1, "b": 1}) == calc.calculate({"a": str(2**60 + 1), "b": "1"})


def test_hex_negative_and_unreduced_values_as_snarkjs_reads_them(multi_public_circuit, tmp_path):
    inputs = {"x": ["-1", "0x10", 3], "k": str(R + 7), "secret": "5"}
    ours = WitnessCalculator(multi_public_circuit.wasm).calculate(inputs)
    theirs = _snarkjs_wtns(multi_public_circuit, inputs, tmp_path / "s.wtns")
    assert wtns_bytes(ours, R) == theirs
    assert ours[3:8] == [R - 1, 16, 3, 7, 5]  # wires after 1 and the two outputs: x, k, secret


def test_a_calculator_is_reusable_and_independent_per_call(multiplier_circuit):
    calc = WitnessCalculator(multiplier_circuit.wasm)
    first = calc.calculate({"a": 2, "b": 3})
    calc.calculate({"a": 5, "b": 7})
    assert calc.calculate({"a": 2, "b": 3}) == first
    assert first[1] != calc.calculate({"a": 5, "b": 7})[1]
