"""One proof's five parts run as process-pool tasks (gpu_engine.circom.parallel): the proof is valid for
the engine's verifier and for snarkjs, and bad pairings of key and witness are refused."""
from __future__ import annotations

import functools
import hashlib

import pytest

from gpu_engine.circom import snarkjs_json
from gpu_engine.circom.api import CircuitRef
from gpu_engine.circom.keycache import dump_key, load_key_bytes
from gpu_engine.circom.parallel import msm_task, preload_key, prove_parallel
from gpu_engine.circom.prover import make_witness
from gpu_engine.circom.witness import calculate_witness
from gpu_engine.circom.zkey import read_zkey
from gpu_engine.engine.pools import ProcessPool
from gpu_engine.groth16.verifier import verify_partition
from tests.circom import tools

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def converted(poseidon_circuit, tmp_path_factory):
    raw = poseidon_circuit.zkey.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    blob = dump_key(read_zkey(raw), digest)
    path = tmp_path_factory.mktemp("key") / "poseidon.key"
    path.write_bytes(blob)
    return load_key_bytes(blob, "poseidon", digest), CircuitRef("poseidon", digest, str(path))


@pytest.fixture(scope="module")
def pool(converted):
    _, ref = converted
    pool = ProcessPool("test-parallel", 2, preload=functools.partial(preload_key, ref),
                       forkserver_preload=["gpu_engine.circom.parallel"])
    pool.start()
    yield pool
    pool.shutdown()


def test_parallel_proof_is_accepted_by_snarkjs(converted, pool, poseidon_circuit, tmp_path):
    key, ref = converted
    values = calculate_witness(poseidon_circuit.wasm, poseidon_circuit.sample_input())
    witness = make_witness(key, "job", 3, values, 0.0)
    proof = prove_parallel(ref, key, witness, pool)
    assert proof.index == 3
    assert verify_partition(key.vk, proof.public_inputs, proof.proof)
    public = snarkjs_json.public_signals(proof.public_inputs)
    assert tools.groth16_verify(poseidon_circuit.vkey_json, public, snarkjs_json.proof(proof.proof), tmp_path)
    assert {"ntt_ms", "msm_a_ms", "msm_b1_ms", "msm_c_ms", "msm_h_ms", "msm_b2_ms"} <= set(proof.timings)


def test_witness_of_another_key_is_refused(converted, pool, poseidon_circuit):
    key, ref = converted
    values = calculate_witness(poseidon_circuit.wasm, poseidon_circuit.sample_input())
    witness = make_witness(key, "job", 0, values, 0.0)
    other = CircuitRef("poseidon", "0" * 64, ref.key_path)
    with pytest.raises(ValueError, match="do not match"):
        prove_parallel(other, key, witness, pool)


def test_unknown_msm_is_refused(converted):
    _, ref = converted
    with pytest.raises(ValueError, match="no MSM named 'z'"):
        msm_task(ref, "z", [])
