"""A whole partition proved with the CUDA backend verifies (skipped without a device)."""
from __future__ import annotations

import pytest

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16 import api
from tests.backends.helpers import requires_gpu

pytestmark = requires_gpu


@pytest.mark.parametrize("kind", ["winning-post", "porep-c2"])
def test_partition_proof_from_the_gpu_verifies(cuda, kind, params_dir):
    params = api.load_params(kind, params_dir)
    witness = api.synthesize_partition(kind, "ps-gpu-test-1", 0)
    proof = api.prove_partition(params, witness, cuda, CpuBackend())
    assert api.verify_partition(params.vk, proof.public_inputs, proof.proof)


def test_gpu_and_cpu_compute_the_same_h(cuda, params_dir):
    params = api.load_params("winning-post", params_dir)
    witness = api.synthesize_partition("winning-post", "ps-gpu-test-2", 0)
    n = params.domain_size
    pad = [0] * (n - len(witness.a))
    args = (witness.a + pad, witness.b + pad, witness.c + pad)
    assert cuda.compute_h(*args) == CpuBackend().compute_h(*args)
