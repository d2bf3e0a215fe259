"""The Groth16 tests: proofs over the session's shared parameter directory."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16 import api

ProveOne = Callable[..., tuple[api.Params, api.PartitionProof]]


@pytest.fixture(scope="session")
def prove_one(params_dir: Path) -> ProveOne:
    """Prove one partition of `kind` on the CPU; returns the params with the proof."""

    def prove(kind: str, job_id: str = "job-test", index: int = 0) -> tuple[api.Params, api.PartitionProof]:
        params = api.load_params(kind, params_dir)
        witness = api.synthesize_partition(kind, job_id, index)
        return params, api.prove_partition(params, witness, CpuBackend())

    return prove
