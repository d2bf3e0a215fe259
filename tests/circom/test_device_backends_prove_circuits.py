"""The device part of a circom proof on the CUDA code paths: the host build of the kernels
(everywhere) and the GPU itself (where there is one) prove the circuit, and snarkjs accepts the
proof. The CPU tail (G2 MSM, assembly) is the CPU backend's, as in the engine."""
from __future__ import annotations

import hashlib

import pytest

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.circom import prover, snarkjs_json
from gpu_engine.circom.keycache import dump_key, load_key_bytes
from gpu_engine.circom.wtns import read_wtns
from gpu_engine.circom.zkey import read_zkey
from gpu_engine.groth16.verifier import verify_partition
from tests.backends.helpers import NO_GPU_REASON
from tests.circom import tools


@pytest.fixture(scope="module")
def proving_inputs(multiplier_circuit, tmp_path_factory):
    raw = multiplier_circuit.zkey.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    key = load_key_bytes(dump_key(read_zkey(raw), digest), "mult", digest)
    wtns = tools.wtns_calculate(multiplier_circuit, multiplier_circuit.sample_input(),
                                tmp_path_factory.mktemp("dev") / "w.wtns")
    return key, prover.make_witness(key, "dev-job", 0, read_wtns(wtns.read_bytes()), 0.0)


def _prove_and_check(backend, key, witness, circuit, workdir):
    device_out = prover.prove_device(key, witness, backend)
    proof = prover.prove_finalize(key, witness, device_out, CpuBackend())
    assert verify_partition(key.vk, proof.public_inputs, proof.proof)
    assert tools.groth16_verify(circuit.vkey_json, snarkjs_json.public_signals(proof.public_inputs),
                                snarkjs_json.proof(proof.proof), workdir)


def test_emulated_device_proves_a_circuit(proving_inputs, multiplier_circuit, tmp_path):
    from gpu_engine.backends.emulation import EmulatedBackend, EmulationBuildError

    try:
        backend = EmulatedBackend()
    except EmulationBuildError as exc:
        pytest.skip(f"no host build of the kernels: {exc}")
    key, witness = proving_inputs
    _prove_and_check(backend, key, witness, multiplier_circuit, tmp_path)


@pytest.mark.gpu
@pytest.mark.skipif(NO_GPU_REASON is not None, reason=f"no CUDA device: {NO_GPU_REASON}")
def test_gpu_proves_a_circuit(proving_inputs, multiplier_circuit, tmp_path):
    from gpu_engine.backends.cuda import CudaBackend

    backend = CudaBackend(0)
    try:
        key, witness = proving_inputs
        _prove_and_check(backend, key, witness, multiplier_circuit, tmp_path)
    finally:
        backend.close()
