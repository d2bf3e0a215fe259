"""A circuit whose witness calculator loops forever, or asks for 1 GiB, fails its partition with the
reason (the bound and its setting) and the engine's one synthesis process goes on to prove the next
job; a runprover stopped with SIGTERM while such a calculator runs exits instead of waiting for it."""
from __future__ import annotations

import signal
import time

import pytest

from gpu_engine.models import PartitionRun, ProofJob
from tests.circom import hostile_wasm
from tests.circom.registered import make_engine, post_job, register
from tests.engine.helpers import all_final, running, wait_for
from tests.runprover.helpers import Site, wait_until


@pytest.fixture(autouse=True)
def _circuits_dir(settings, tmp_path, api_token):
    settings.CIRCUITS_DIR = tmp_path / "circuits"
    settings.CIRCUIT_WITNESS_TIMEOUT = 2.0
    settings.CIRCUIT_WITNESS_MEMORY = 64 << 20


def _register_wasm(circuit, name: str, wasm) -> None:
    from django.core.management import call_command

    call_command("addcircuit", name, "--zkey", str(circuit.zkey), "--wasm", str(wasm))


@pytest.mark.django_db(transaction=True)
def test_looping_and_hungry_calculators_fail_their_partitions_and_the_engine_proves_on(
        client, params_dir, multiplier_circuit, tmp_path):
    wires = multiplier_circuit.info["wires"]
    _register_wasm(multiplier_circuit, "loop", hostile_wasm.looping(tmp_path / "loop.wasm", wires))
    _register_wasm(multiplier_circuit, "hungry", hostile_wasm.memory_hungry(tmp_path / "hungry.wasm", wires))
    register(multiplier_circuit, "mult")
    item = {"a": "3", "b": "11"}
    for job_id, kind, priority in (("looping", "loop", 9), ("hungry", "hungry", 8), ("after", "mult", 0)):
        r = post_job(client, {"proof_kind": kind, "job_id": job_id, "priority": priority, "inputs": [item]})
        assert r.status_code == 201, r.content
    engine = make_engine(params_dir, synth_workers=1)
    with running(engine):
        wait_for(lambda: all_final(["looping", "hungry", "after"]), timeout=180)
        engine.history.flush(10)
        rebuilds = engine.feeder.pool.rebuilds
    looping, hungry, after = (ProofJob.objects.get(job_id=j) for j in ("looping", "hungry", "after"))
    assert looping.status == "failed"
    assert "ran past its deadline of 2 s (CIRCUIT_WITNESS_TIMEOUT)" in looping.error
    assert hungry.status == "failed"
    assert "limit of 64 MiB (CIRCUIT_WITNESS_MEMORY)" in hungry.error
    assert after.status == "done" and after.verified, after.error
    assert rebuilds == 0  # the same synthesis process, healthy: no replacement was needed
    run = PartitionRun.objects.get(job=looping, index=0)
    assert run.state == "failed" and run.gpu_ms is None


def test_sigterm_does_not_wait_for_a_looping_calculator(tmp_path, params_dir, multiplier_circuit):
    site = Site(tmp_path, params_dir, CIRCUIT_WITNESS_TIMEOUT="3",
                VASTMANAGER_CIRCUITS_DIR=str(tmp_path / "circuits"))
    wasm = hostile_wasm.looping(tmp_path / "loop.wasm", multiplier_circuit.info["wires"])
    site.manage("addcircuit", "loop", "--zkey", str(multiplier_circuit.zkey), "--wasm", str(wasm))
    site.manage("shell", "-c", "from gpu_engine.circom import jobs, registry; "
                """jobs.submit(registry.get_circuit('loop'), 'inputs', [b'{"a":"3","b":"11"}'], 'spin')""")
    proc = site.start("--engine-id", "engine-loop", "--drain-secs", "60")
    try:
        wait_until(lambda: site.status("spin") == "running", proc=proc)
        time.sleep(0.5)  # the partition is in the calculator's loop
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    elapsed = time.monotonic() - started
    assert code == 0, site.log()
    assert elapsed < 30
    print(f"\nSIGTERM with a looping calculator (deadline 3 s): runprover exited in {elapsed:.2f} s")
    status, error = site.query("SELECT status, error FROM gpu_engine_proofjob WHERE job_id = 'spin'")[0]
    assert status == "failed" and "ran past its deadline of 3 s" in error, (status, error)
