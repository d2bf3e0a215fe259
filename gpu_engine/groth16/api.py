"""The Groth16 entry points the engine and the commands use (see docs/CONTRACTS.md).

Pure: nothing here imports Django, and `synthesize_partition` returns plain picklable
data, so it can run in a process pool. The engine calls, per partition:
synthesize_partition (process pool) -> prove_device (GPU worker thread) ->
prove_finalize (finalizer) -> verify_partition (assembler).
"""
from __future__ import annotations

from pathlib import Path

from gpu_engine.groth16.binding import BundleCheck, check_bundle, statement_inputs, verify_bundle
from gpu_engine.groth16.bundle import BundleFormatError, make_bundle, parse_bundle, parse_vk, vk_json
from gpu_engine.groth16.circuits import Witness, synthesize
from gpu_engine.groth16.keys import Params, ParamsFileError, VerifyingKey, vk_fingerprint
from gpu_engine.groth16.params_cache import ParamsMissing, ParamsUnavailable, load_params, regenerate_params
from gpu_engine.groth16.prover import DeviceOutput, PartitionProof, Proof, prove_device, prove_finalize
from gpu_engine.groth16.r1cs import UnsatisfiedConstraint
from gpu_engine.groth16.setup import Progress
from gpu_engine.groth16.verifier import verify_partition
from gpu_engine.kinds import PROOF_KINDS, get_kind

__all__ = [
    "PROOF_KINDS", "BundleCheck", "BundleFormatError", "DeviceOutput", "Params", "ParamsFileError", "ParamsMissing",
    "ParamsUnavailable", "PartitionProof", "Proof", "UnsatisfiedConstraint", "VerifyingKey", "Witness",
    "check_bundle", "load_params", "make_bundle", "parse_bundle", "parse_vk", "partition_bytes", "prove_device",
    "prove_finalize", "prove_job", "prove_partition", "regenerate_params", "statement_inputs", "synthesize_partition",
    "verify_bundle", "verify_partition", "vk_fingerprint", "vk_json",
]

_FR_BYTES = 32


def synthesize_partition(kind: str, job_id: str, index: int, scale: int = 1) -> Witness:
    """The witness of partition `index` of job `job_id` (every constraint checked)."""
    return synthesize(kind, job_id, index, scale)


def partition_bytes(params: Params) -> int:
    """Bytes one partition in flight holds (the memory-budget reservation).

    Counted as device-resident Fr vectors: the three evaluation vectors and their NTT
    working copies (8 domain-sized vectors at the peak of compute_h) plus the MSM scalar
    vectors (z for A, B, L and h: about 4 variable-sized ones), and 1 MiB of slack for
    MSM buckets and results."""
    return _FR_BYTES * (8 * params.domain_size + 4 * params.num_vars) + (1 << 20)


def prove_partition(params: Params, witness: Witness, backend, cpu_backend=None) -> PartitionProof:
    """Both halves in one call (commands, tests, the bench)."""
    device_out = prove_device(params, witness, backend)
    return prove_finalize(params, witness, device_out, cpu_backend or backend)


def prove_job(kind: str, job_id: str, params_dir: Path | str, scale: int = 1, backend=None,
              progress: Progress | None = None) -> tuple[Params, list[PartitionProof]]:
    """Prove every partition of one job in this thread (no engine): params (which must exist) and proofs."""
    if backend is None:
        from gpu_engine.backends.cpu import CpuBackend

        backend = CpuBackend()
    params = load_params(kind, params_dir, scale, progress)
    proofs = [
        prove_partition(params, synthesize_partition(kind, job_id, i, scale), backend)
        for i in range(get_kind(kind).partitions)
    ]
    return params, proofs
