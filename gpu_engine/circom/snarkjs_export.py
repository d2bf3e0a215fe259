"""A circuit job's proofs in snarkjs's files: the API's `?format=snarkjs` and `exportproof`.

Built from the stored bundle (the engine's one exchange format), so both answers are the same
proofs: per partition snarkjs's proof.json and public.json, field for field.
"""
from __future__ import annotations

import json
from pathlib import Path

from gpu_engine.circom import snarkjs_json
from gpu_engine.groth16.bundle import parse_bundle
from gpu_engine.groth16.keyfile import write_atomic


def job_proofs(bundle: dict) -> dict:
    """{"job_id", "proof_kind", "partitions": [{"index", "proof", "publicSignals"}]}."""
    kind, job_id, _vk, parts = parse_bundle(bundle)
    return {
        "job_id": job_id,
        "proof_kind": kind,
        "partitions": [
            {"index": index, "proof": snarkjs_json.proof(proof), "publicSignals": snarkjs_json.public_signals(inputs)}
            for index, inputs, proof in sorted(parts, key=lambda p: p[0])
        ],
    }


def write_files(bundle: dict, out_dir: Path) -> list[Path]:
    """proof_<i>.json and public_<i>.json per partition in `out_dir`; the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for part in job_proofs(bundle)["partitions"]:
        for stem, payload in (("proof", part["proof"]), ("public", part["publicSignals"])):
            path = out_dir / f"{stem}_{part['index']}.json"
            write_atomic(path, json.dumps(payload, indent=1) + "\n")
            written.append(path)
    return written
