"""A whole partition proved with the CUDA backend verifies (skipped without a device)."""
from __future__ import annotations

import pytest

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16 import api
from tests.backends.helpers import cuda_backend_fixture, requires_gpu
from tests.groth16.helpers import shared_params_dir

pytestmark = requires_gpu

cuda = pytest.fixture(scope="module")(cuda_backend_fixture)


@pytest.mark.parametrize("kind", ["winning-post", "porep-c2"])
def test_partition_proof_from_the_gpu_verifies(cuda, kind):
    params = api.load_params(kind, shared_params_dir())
    witness = api.synthesize_partition(kind, "ps-gpu-test-1", 0)
    proof = api.prove_partition(params, witness, cuda, CpuBackend())
    assert api.verify_partition(params.vk, proof.public_inputs, proof.proof)


def test_gpu_and_cpu_compute_the_same_h(cuda):
    params = api.load_params("winning-post", shared_params_dir())
    witness = api.synthesize_partition("winning-post", "ps-gpu-test-2", 0)
    n = params.domain_size
    pad = [0] * (n - len(witness.a))
    args = (witness.a + pad, witness.b + pad, witness.c + pad)
    assert cuda.compute_h(*args) == CpuBackend().compute_h(*args)
