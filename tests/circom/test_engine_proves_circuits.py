"""Registered circuits proved end to end: inputs and witnesses through the API, the engine's pipeline
(CPU backend), and every proof accepted by `snarkjs groth16 verify` with snarkjs's own key file;
a public signal changed by one is refused by snarkjs."""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from gpu_engine.models import CircuitJob, PartitionRun, ProofJob
from tests.circom import tools
from tests.circom.registered import b64, make_engine, post_job, register, snarkjs_proofs, verify_all
from tests.credentials import AUTH
from tests.engine.helpers import all_final, running, wait_for


@pytest.fixture(autouse=True)
def _circuits_dir(settings, tmp_path, api_token):
    settings.CIRCUITS_DIR = tmp_path / "circuits"


def _inputs(n: int) -> list[dict]:
    return [{"a": str(3 + i), "b": str(11 + 2 * i)} for i in range(n)]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_inputs_and_witnesses_are_proved_and_snarkjs_accepts_every_proof(client, params_dir, multiplier_circuit,
                                                                         tmp_path):
    register(multiplier_circuit, "mult", label="Multiplier chain (64 links)")
    inputs = _inputs(4)
    r1 = post_job(client, {"proof_kind": "mult", "job_id": "by-inputs", "inputs": inputs})
    assert r1.status_code == 201, r1.content
    assert r1.json()["total_partitions"] == 4
    wtns = [tools.wtns_calculate(multiplier_circuit, x, tmp_path / f"w{i}.wtns") for i, x in enumerate(inputs[:2])]
    r2 = post_job(client, {"proof_kind": "mult", "job_id": "by-witnesses", "witnesses": [b64(p) for p in wtns]})
    assert r2.status_code == 201, r2.content
    assert CircuitJob.objects.get(job__job_id="by-witnesses").source == "witnesses"

    engine = make_engine(params_dir, workers_per_device=2)
    with running(engine):
        wait_for(lambda: all_final(["by-inputs", "by-witnesses"]), timeout=180)
        engine.history.flush(10)
    for job_id, n in (("by-inputs", 4), ("by-witnesses", 2)):
        job = ProofJob.objects.get(job_id=job_id)
        assert job.status == "done", job.error
        assert job.verified
        runs = PartitionRun.objects.filter(job=job, state="done")
        assert sorted(r.index for r in runs) == list(range(n))
        assert all(r.proof_kind == "mult" and r.gpu_ms > 0 and r.finalize_ms > 0 for r in runs)
        result = snarkjs_proofs(client, job_id)
        assert result["job_id"] == job_id and result["proof_kind"] == "mult"
        assert [p["index"] for p in result["partitions"]] == list(range(n))
        for part in result["partitions"]:
            assert set(part["proof"]) == {"pi_a", "pi_b", "pi_c", "protocol", "curve"}
            assert part["proof"]["protocol"] == "groth16" and part["proof"]["curve"] == "bls12381"
        assert all(verify_all(multiplier_circuit, result, tmp_path / job_id))

    # publicSignals are snarkjs's own: [out, b] as `snarkjs groth16 prove` writes them
    ours = snarkjs_proofs(client, "by-witnesses")["partitions"][0]
    _, public = tools.groth16_prove(multiplier_circuit, wtns[0], tmp_path)
    assert ours["publicSignals"] == public
    tampered = list(ours["publicSignals"])
    tampered[0] = str(int(tampered[0]) + 1)
    assert tools.groth16_verify(multiplier_circuit.vkey_json, tampered, ours["proof"], tmp_path / "tampered") is False

    # exportproof writes the same files snarkjs verifies
    out = tmp_path / "export"
    call_command("exportproof", "by-inputs", "--format", "snarkjs", "--out", str(out))
    for i in range(4):
        proof = json.loads((out / f"proof_{i}.json").read_text())
        public = json.loads((out / f"public_{i}.json").read_text())
        assert tools.groth16_verify(multiplier_circuit.vkey_json, public, proof, tmp_path / f"export-{i}")

    snap = engine.tracker.snapshot()
    assert snap["counters"]["total_completed"] == 2
    # the panel shows the circuit's full label and one cell per input
    pipes = {p["job_id"]: p for p in snap["pipelines"]}
    assert pipes["by-inputs"]["proof_label"] == "Multiplier chain (64 links)"
    assert pipes["by-inputs"]["total_partitions"] == 4 and len(pipes["by-inputs"]["partitions"]) == 4
    from statuspanel.render.engine import render_engine

    assert "Multiplier chain (64 links)" in render_engine(snap)


@pytest.mark.django_db(transaction=True)
def test_unsatisfiable_input_fails_its_partition_with_the_circuits_message(client, params_dir,
                                                                           multi_public_circuit):
    register(multi_public_circuit, "wsum")
    good = multi_public_circuit.sample_input()
    bad = dict(good, secret="0")  # NonZero's `inv * in === 1` fails in the witness calculator
    r = post_job(client, {"proof_kind": "wsum", "job_id": "unsat", "inputs": [good, bad]})
    assert r.status_code == 201, r.content
    engine = make_engine(params_dir)
    with running(engine):
        wait_for(lambda: all_final(["unsat"]), timeout=120)
        engine.history.flush(10)
    job = ProofJob.objects.get(job_id="unsat")
    assert job.status == "failed"
    assert "partition 1 failed 1 time(s)" in job.error and "Assert Failed" in job.error
    failed = PartitionRun.objects.get(job=job, index=1, state="failed")
    assert failed.gpu_ms is None  # refused in synthesis, before any device work
    detail = client.get("/api/jobs/unsat", **AUTH).json()
    assert any("Assert Failed" in (r["error"] or "") for r in detail["partition_runs"])
