"""The fixture circuits are real: snarkjs proves each with its key and verifies the proof, refuses
it when a public signal is changed by one, and the cache hands back the same keys."""
from __future__ import annotations

import pytest

from tests.circom import tools

pytestmark = pytest.mark.slow


def test_snarkjs_proves_and_verifies_each_fixture(any_circuit, tmp_path):
    wtns = tools.wtns_calculate(any_circuit, any_circuit.sample_input(), tmp_path / "w.wtns")
    proof, public = tools.groth16_prove(any_circuit, wtns, tmp_path)
    assert proof["curve"] == "bls12381" and proof["protocol"] == "groth16"
    assert len(public) == any_circuit.vkey["nPublic"]
    assert tools.groth16_verify(any_circuit.vkey_json, public, proof, tmp_path / "ok")
    tampered = [str(int(public[0]) + 1)] + public[1:]
    assert not tools.groth16_verify(any_circuit.vkey_json, tampered, proof, tmp_path / "bad")


def test_fixtures_are_bls12_381_with_their_public_signals(multiplier_circuit, multi_public_circuit, poseidon_circuit):
    assert multiplier_circuit.vkey["curve"] == "bls12381"
    assert multiplier_circuit.vkey["nPublic"] == 2  # out, b
    assert multi_public_circuit.vkey["nPublic"] == 6  # total, blinded, x[0..2], k
    assert poseidon_circuit.info["constraints"] > 500
    assert multiplier_circuit.wasm.exists() and multiplier_circuit.sym.exists() and multiplier_circuit.r1cs.exists()


def test_cache_is_reused(multiplier_circuit):
    again = tools.build_circuit(multiplier_circuit.source, power=10)
    assert again.directory == multiplier_circuit.directory
    assert again.zkey.stat().st_mtime == multiplier_circuit.zkey.stat().st_mtime


def test_multi_public_sample_output(multi_public_circuit, tmp_path):
    wtns = tools.wtns_calculate(multi_public_circuit, multi_public_circuit.sample_input(), tmp_path / "w.wtns")
    _, public = tools.groth16_prove(multi_public_circuit, wtns, tmp_path)
    # total = (1 + 2 + 3) * 7 = 42, blinded = 42 * 5; then the public inputs x and k
    assert public == ["42", "210", "1", "2", "3", "7"]
