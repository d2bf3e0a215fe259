"""A submitted witness that breaks a constraint: with the r1cs registered it fails its partition in
synthesis, naming the constraint, before any device work; without it, the proof made from it does
not verify and the partition fails with that (never a job marked done with a wrong proof)."""
from __future__ import annotations

import pytest

from gpu_engine.circom.wtns import read_wtns, write_wtns
from gpu_engine.models import PartitionRun, ProofJob
from tests.circom import tools
from tests.circom.registered import make_engine, post_job, register
from tests.engine.helpers import all_final, running, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _circuits_dir(settings, tmp_path, api_token):
    settings.CIRCUITS_DIR = tmp_path / "circuits"


def _broken_witness(circuit: tools.CircuitFiles, tmp_path) -> str:
    import base64

    good = tools.wtns_calculate(circuit, circuit.sample_input(), tmp_path / "good.wtns")
    values = read_wtns(good.read_bytes())
    values[10] = (values[10] + 1)  # an internal link of the chain
    return base64.b64encode(write_wtns(values)).decode()


def test_with_the_r1cs_the_broken_constraint_is_named_before_device_work(client, params_dir, multiplier_circuit,
                                                                         tmp_path):
    register(multiplier_circuit, "mult")
    r = post_job(client, {"proof_kind": "mult", "job_id": "broken", "witnesses": [_broken_witness(multiplier_circuit,
                                                                                                   tmp_path)]})
    assert r.status_code == 201, r.content  # structurally a fine witness file
    engine = make_engine(params_dir)
    with running(engine):
        wait_for(lambda: all_final(["broken"]), timeout=120)
        engine.history.flush(10)
    job = ProofJob.objects.get(job_id="broken")
    assert job.status == "failed" and not job.verified and job.bundle is None
    assert "does not satisfy constraint" in job.error
    runs = list(PartitionRun.objects.filter(job=job))
    assert len(runs) == 1  # not retried: the witness itself is wrong
    assert runs[0].gpu_started_at is None and runs[0].gpu_ms is None


def test_without_the_r1cs_the_proof_does_not_verify(client, params_dir, multiplier_circuit, tmp_path):
    register(multiplier_circuit, "bare", wasm=False, r1cs=False)
    post_job(client, {"proof_kind": "bare", "job_id": "broken2", "witnesses": [_broken_witness(multiplier_circuit,
                                                                                                tmp_path)]})
    engine = make_engine(params_dir, partition_attempts=1)
    with running(engine):
        wait_for(lambda: all_final(["broken2"]), timeout=120)
        engine.history.flush(10)
    job = ProofJob.objects.get(job_id="broken2")
    assert job.status == "failed" and job.bundle is None
    assert "does not verify" in job.error and "may not satisfy" in job.error
