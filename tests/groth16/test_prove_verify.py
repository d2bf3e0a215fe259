"""Every proof kind proves and verifies; tampering and foreign keys are rejected."""
from __future__ import annotations

import pickle
import threading

import pytest
from py_arkworks_bls12381 import G1Point

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16 import api
from gpu_engine.groth16.field import R
from gpu_engine.groth16.points import to_scalar
from gpu_engine.groth16.prover import Proof
from gpu_engine.kinds import PROOF_KINDS

KINDS = sorted(PROOF_KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_proves_and_verifies(kind, prove_one):
    params, pp = prove_one(kind)
    assert api.verify_partition(params.vk, pp.public_inputs, pp.proof)
    assert set(pp.timings) == {"synthesis_ms", "ntt_ms", "msm_g1_ms", "msm_g2_ms"}
    assert all(v > 0 for v in pp.timings.values())


def test_tampered_proof_is_rejected(prove_one):
    params, pp = prove_one("winning-post")
    g = G1Point()
    for tampered in (
        Proof(pp.proof.a + g, pp.proof.b, pp.proof.c),
        Proof(pp.proof.a, pp.proof.b, pp.proof.c + g),
        Proof(pp.proof.c, pp.proof.b, pp.proof.a),
    ):
        assert not api.verify_partition(params.vk, pp.public_inputs, tampered)


def test_tampered_public_input_is_rejected(prove_one):
    params, pp = prove_one("winning-post")
    for j in range(len(pp.public_inputs)):
        inputs = list(pp.public_inputs)
        inputs[j] = (inputs[j] + 1) % R
        assert not api.verify_partition(params.vk, inputs, pp.proof)
    assert not api.verify_partition(params.vk, pp.public_inputs[:-1], pp.proof)
    assert not api.verify_partition(params.vk, [x + R for x in pp.public_inputs], pp.proof)


def test_another_partitions_inputs_are_rejected(prove_one):
    params, pp = prove_one("porep-c2", index=0)
    other = api.synthesize_partition("porep-c2", "job-test", 1)
    assert not api.verify_partition(params.vk, other.public_inputs, pp.proof)


def test_proof_checked_against_another_circuits_key_is_rejected(params_dir, prove_one):
    _, pp = prove_one("snap-update")
    window = api.load_params("window-post", params_dir)  # same input count, other circuit
    assert window.vk.num_public == len(pp.public_inputs)
    assert not api.verify_partition(window.vk, pp.public_inputs, pp.proof)
    winning = api.load_params("winning-post", params_dir)
    assert not api.verify_partition(winning.vk, pp.public_inputs, pp.proof)


def test_proofs_are_randomized(prove_one):
    _, p1 = prove_one("winning-post")
    _, p2 = prove_one("winning-post")
    assert p1.public_inputs == p2.public_inputs
    assert p1.proof != p2.proof


def test_split_proving_across_threads_and_pickles(params_dir):
    params = api.load_params("winning-post", params_dir)
    witness = pickle.loads(pickle.dumps(api.synthesize_partition("winning-post", "split", 0)))
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("dev", api.prove_device(params, witness, CpuBackend())))
    t.start()
    t.join()
    device_out = pickle.loads(pickle.dumps(box["dev"]))
    pp = pickle.loads(pickle.dumps(api.prove_finalize(params, witness, device_out, CpuBackend())))
    assert api.verify_partition(params.vk, pp.public_inputs, pp.proof)


def test_witness_of_another_kind_is_refused(params_dir):
    params = api.load_params("winning-post", params_dir)
    witness = api.synthesize_partition("window-post", "j", 0)
    with pytest.raises(ValueError, match="witness is for window-post"):
        api.prove_device(params, witness, CpuBackend())


def test_unsatisfying_evaluations_are_refused_by_the_prover(params_dir):
    params = api.load_params("winning-post", params_dir)
    witness = api.synthesize_partition("winning-post", "bad", 0)
    witness.c[5] = (witness.c[5] + 1) % R
    with pytest.raises(ValueError, match="does not satisfy"):
        api.prove_device(params, witness, CpuBackend())


def test_proof_forged_from_the_keys_public_points_is_rejected(params_dir):
    vk = api.load_params("winning-post", params_dir).vk
    forged = Proof(vk.alpha_g1, vk.beta_g2, vk.ic[0] * to_scalar(2))
    assert not api.verify_partition(vk, [1] * vk.num_public, forged)


def test_partition_bytes_grows_with_the_circuit(params_dir):
    small = api.load_params("winning-post", params_dir)
    big = api.load_params("window-post", params_dir)
    assert 0 < api.partition_bytes(small) < api.partition_bytes(big)
