"""Each test circuit (the multiplier chain, several public inputs, circomlib's Poseidon) registered,
its sample input proved by the engine, and the proof accepted by `snarkjs groth16 verify` with the
circuit's verification key as served by the API."""
from __future__ import annotations

import pytest

from gpu_engine.models import ProofJob
from tests.circom import tools
from tests.circom.registered import make_engine, post_job, register, snarkjs_proofs
from tests.credentials import AUTH
from tests.engine.helpers import all_final, running, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture(autouse=True)
def _circuits_dir(settings, tmp_path, api_token):
    settings.CIRCUITS_DIR = tmp_path / "circuits"


def test_every_fixture_circuit_is_proved_and_verified_by_snarkjs(client, params_dir, tmp_path, multiplier_circuit,
                                                                  multi_public_circuit, poseidon_circuit):
    circuits = {"mult": multiplier_circuit, "wsum": multi_public_circuit, "poseidon": poseidon_circuit}
    for name, files in circuits.items():
        register(files, name)
        r = post_job(client, {"proof_kind": name, "job_id": f"job-{name}", "inputs": [files.sample_input()] * 2})
        assert r.status_code == 201, r.content
    engine = make_engine(params_dir)
    with running(engine):
        wait_for(lambda: all_final([f"job-{n}" for n in circuits]), timeout=300)
    for name, files in circuits.items():
        job = ProofJob.objects.get(job_id=f"job-{name}")
        assert job.status == "done", job.error
        vkey = client.get(f"/api/circuits/{name}/vkey", **AUTH).json()
        assert vkey == files.vkey
        # snarkjs's own proof of the same input has the same public signals
        wtns = tools.wtns_calculate(files, files.sample_input(), tmp_path / f"{name}.wtns")
        _, public = tools.groth16_prove(files, wtns, tmp_path)
        for part in snarkjs_proofs(client, job.job_id)["partitions"]:
            assert part["publicSignals"] == public
            assert tools.groth16_verify(vkey, part["publicSignals"], part["proof"], tmp_path / f"{name}-{part['index']}")
            tampered = list(part["publicSignals"])
            tampered[-1] = str(int(tampered[-1]) + 1)
            assert not tools.groth16_verify(vkey, tampered, part["proof"], tmp_path / f"{name}-bad")
