"""`verifyproof` on a circuit job's bundle verifies it against the circuit's key (never "unknown proof
kind"): the registered key, or snarkjs's verification_key.json given with --key; a bundle whose
signals are not the stored job's is named (exit 1); an unknown circuit without --key says how circuit
proofs are verified (exit 3)."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.circom import api as circom_api
from gpu_engine.circom import registry
from gpu_engine.circom.prover import make_witness, prove_device
from gpu_engine.circom.witness import calculate_witness
from gpu_engine.groth16.bundle import make_bundle
from gpu_engine.groth16.prover import prove_finalize
from gpu_engine.models import JobStatus, ProofJob
from tests.circom.registered import register

pytestmark = pytest.mark.django_db

INPUTS = [{"a": "3", "b": "11"}, {"a": "5", "b": "7"}]


@pytest.fixture(autouse=True)
def _circuits_dir(settings, tmp_path, api_token):
    settings.CIRCUITS_DIR = tmp_path / "circuits"


@pytest.fixture
def bundle(multiplier_circuit) -> dict:
    """A two-partition `mult` job proved here, stored as the engine stores a done job."""
    circuit = register(multiplier_circuit, "mult")
    key = circom_api.load(registry.circuit_ref(circuit))
    cpu = CpuBackend()
    proofs = []
    for i, item in enumerate(INPUTS):
        witness = make_witness(key, "mult-job", i, calculate_witness(multiplier_circuit.wasm, item), 0.0)
        proofs.append(prove_finalize(key, witness, prove_device(key, witness, cpu), cpu))
    made = make_bundle("mult", "mult-job", key.vk, proofs)
    ProofJob.objects.create(job_id="mult-job", proof_kind="mult", status=JobStatus.DONE, total_partitions=2,
                            bundle=made, verified=True)
    return made


def _verify(tmp_path, bundle: dict, *args: str) -> str:
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    out = StringIO()
    call_command("verifyproof", str(path), *args, stdout=out)
    return out.getvalue()


def test_a_circuit_bundle_verifies_against_the_registered_key(bundle, tmp_path):
    out = _verify(tmp_path, bundle)
    assert "partition 0: valid" in out and "partition 1: valid" in out
    assert "mult job mult-job: all 2 partition(s) verify against circuit mult's registered key" in out


def test_signals_that_are_not_the_stored_jobs_are_named(bundle, tmp_path):
    swapped = json.loads(json.dumps(bundle))
    parts = swapped["partitions"]
    parts[0]["public_inputs"], parts[1]["public_inputs"] = parts[1]["public_inputs"], parts[0]["public_inputs"]
    with pytest.raises(CommandError) as err:
        _verify(tmp_path, swapped)
    assert err.value.returncode == 1
    assert "partitions[0].public_inputs: not the public signals of job mult-job's partition 0" in str(err.value)
    assert "partition(s) 0, 1 of 2 failed verification" in str(err.value)
    dropped = json.loads(json.dumps(bundle))
    dropped["partitions"] = dropped["partitions"][:1]
    with pytest.raises(CommandError, match="partitions: job mult-job has 2; missing index"):
        _verify(tmp_path, dropped)


def test_an_unknown_circuit_says_how_to_verify_and_its_snarkjs_key_verifies_it(bundle, tmp_path,
                                                                               multiplier_circuit):
    foreign = dict(bundle, proof_kind="elsewhere", job_id="their-job")
    with pytest.raises(CommandError) as err:
        _verify(tmp_path, foreign)
    assert err.value.returncode == 3
    assert "'elsewhere' is neither a built-in kind" in str(err.value)
    assert "--key verification_key.json" in str(err.value) and "snarkjs groth16 verify" in str(err.value)
    out = _verify(tmp_path, foreign, "--key", str(multiplier_circuit.vkey_json))
    assert "all 2 partition(s) verify against the key in" in out
    assert "job their-job is not known here" in out
