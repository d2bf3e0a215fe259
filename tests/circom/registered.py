"""Helpers of the tests that register circuits and prove them through the API and the engine."""
from __future__ import annotations

import base64
import json
from pathlib import Path

from django.core.management import call_command

from gpu_engine.models import Circuit
from tests.circom import tools
from tests.credentials import AUTH


def register(circuit: tools.CircuitFiles, name: str, *, wasm: bool = True, r1cs: bool = True,
             label: str = "") -> Circuit:
    args = [name, "--zkey", str(circuit.zkey)]
    if wasm:
        args += ["--wasm", str(circuit.wasm), "--sym", str(circuit.sym)]
    if r1cs:
        args += ["--r1cs", str(circuit.r1cs)]
    if label:
        args += ["--label", label]
    call_command("addcircuit", *args)
    return Circuit.objects.get(name=name)


def post_job(client, body: dict):
    return client.post("/api/jobs", json.dumps(body), content_type="application/json", **AUTH)


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def snarkjs_proofs(client, job_id: str) -> dict:
    response = client.get(f"/api/jobs/{job_id}/proof?format=snarkjs", **AUTH)
    assert response.status_code == 200, response.content
    return response.json()


def verify_all(circuit: tools.CircuitFiles, result: dict, workdir: Path) -> list[bool]:
    """`snarkjs groth16 verify` on every partition, with the circuit's own verification_key.json."""
    return [tools.groth16_verify(circuit.vkey_json, p["publicSignals"], p["proof"], workdir / f"v{p['index']}")
            for p in result["partitions"]]


def make_engine(params_dir: Path, **overrides):
    """A small CPU engine like the engine tests' (the built-in kinds' params from the session directory)."""
    from gpu_engine.engine import Engine, EngineConfig

    fields = dict(engine_id="circom-engine", backend="cpu", gpus=[0], workers_per_device=2, synth_workers=1,
                  params_dir=params_dir, scale=1, lease_secs=5.0, heartbeat_secs=0.2, poll_secs=0.05,
                  drain_secs=10.0, grace_secs=60.0)
    fields.update(overrides)
    return Engine(EngineConfig(**fields))
