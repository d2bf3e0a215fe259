"""Shared by the Groth16 tests: one parameter directory per test process.

Params are cached in memory per directory, so every test module that uses
`shared_params_dir()` pays for each shape's setup once per run."""
from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16 import api

_DIR: Path | None = None


def shared_params_dir() -> Path:
    global _DIR
    if _DIR is None:
        _DIR = Path(tempfile.mkdtemp(prefix="vm-groth16-params-"))
        atexit.register(shutil.rmtree, _DIR, True)
    return _DIR


def prove_one(kind: str, job_id: str = "job-test", index: int = 0) -> tuple[api.Params, api.PartitionProof]:
    params = api.load_params(kind, shared_params_dir())
    witness = api.synthesize_partition(kind, job_id, index)
    return params, api.prove_partition(params, witness, CpuBackend())
