"""Circuit files nothing needs any more go: the staging folder of a registration killed with -9 is
removed at the next start (a live registration's is not), a finished job's items follow
CIRCUIT_ITEMS_RETENTION_DAYS, and the folder of a submit killed before its row was stored is
removed once it is old enough that no submit can still be writing it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from gpu_engine.circom import housekeeping
from gpu_engine.circom.jobs import item_path, submit
from gpu_engine.models import CircuitJob, ProofJob
from tests.circom.registered import register

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db

# A registration that stages its files and then hangs, as one killed with -9 mid-validation would.
STAGES_THEN_HANGS = """
import sys, time, django
django.setup()
from django.core.files import File
from gpu_engine.circom.forms import CircuitForm
form = CircuitForm({"name": "killed"}, {"zkey": File(open(sys.argv[1], "rb"), name="c.zkey")})
form.cleaned_data = {"zkey": form.files["zkey"]}  # as after field cleaning, when validation stages the files
form._stage("zkey")
print("staged", flush=True)
time.sleep(600)
"""


@pytest.fixture(autouse=True)
def _circuits_dir(settings, tmp_path, api_token):
    settings.CIRCUITS_DIR = tmp_path / "circuits"


def _staging(settings) -> list[Path]:
    return sorted(settings.CIRCUITS_DIR.glob(".staging-*"))


def _stage_in_child(settings, zkey: Path) -> subprocess.Popen:
    env = {**os.environ, "VASTMANAGER_CIRCUITS_DIR": str(settings.CIRCUITS_DIR),
           "DJANGO_SETTINGS_MODULE": "vastmanager.settings"}
    proc = subprocess.Popen([sys.executable, "-c", STAGES_THEN_HANGS, str(zkey)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "staged"
    return proc


def test_a_killed_registrations_staging_is_swept_and_a_live_ones_is_kept(settings, multiplier_circuit):
    live = _stage_in_child(settings, multiplier_circuit.zkey)
    killed = _stage_in_child(settings, multiplier_circuit.zkey)
    try:
        assert len(_staging(settings)) == 2
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        assert housekeeping.sweep_staging() == 1
        assert len(_staging(settings)) == 1  # the live registration still holds its lock
        # the next registration sweeps too (what `addcircuit` and the admin run)
        live.send_signal(signal.SIGKILL)
        live.wait(10)
        register(multiplier_circuit, "next", wasm=False, r1cs=False)
        assert _staging(settings) == []
    finally:
        for proc in (live, killed):
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def _finished_job(circuit, job_id: str, status: str, days_ago: float) -> CircuitJob:
    job, _ = submit(circuit, CircuitJob.INPUTS, [b'{"a":"3","b":"4"}'], job_id)
    ProofJob.objects.filter(pk=job.pk).update(status=status, finished_at=timezone.now() - timedelta(days=days_ago))
    return CircuitJob.objects.get(job=job)


def test_finished_jobs_items_follow_the_retention_setting(settings, multiplier_circuit):
    settings.CIRCUIT_ITEMS_RETENTION_DAYS = 2
    circuit = register(multiplier_circuit, "mult", wasm=True, r1cs=False)
    old_done = _finished_job(circuit, "old-done", "done", 3)
    old_failed = _finished_job(circuit, "old-failed", "failed", 3)
    recent = _finished_job(circuit, "recent", "done", 1)
    queued, _ = submit(circuit, CircuitJob.INPUTS, [b'{"a":"3","b":"4"}'], "queued")
    old_paths = [item_path(old_done, 0), item_path(old_failed, 0)]
    assert all(p.exists() for p in old_paths)
    swept = housekeeping.housekeep()
    assert swept.items == 2
    assert not any(p.exists() for p in old_paths)
    assert CircuitJob.objects.get(pk=old_done.pk).items_dir == ""
    assert item_path(recent, 0).exists() and item_path(CircuitJob.objects.get(job=queued), 0).exists()
    assert housekeeping.housekeep().items == 0  # once


def test_an_unnamed_items_folder_is_removed_once_no_submit_can_be_writing_it(settings, multiplier_circuit):
    circuit = register(multiplier_circuit, "mult", wasm=True, r1cs=False)
    kept, _ = submit(circuit, CircuitJob.INPUTS, [b'{"a":"3","b":"4"}'], "kept")
    jobs = settings.CIRCUITS_DIR / "jobs"
    fresh, stale = jobs / "fresh-orphan", jobs / "stale-orphan"
    for folder in (fresh, stale):
        folder.mkdir()
        (folder / "0.json").write_bytes(b"{}")
    old = time.time() - housekeeping.ORPHAN_GRACE_SECS - 60
    os.utime(stale, (old, old))
    kept_dir = settings.CIRCUITS_DIR / CircuitJob.objects.get(job=kept).items_dir
    os.utime(kept_dir, (old, old))
    assert housekeeping.housekeep().orphans == 1
    assert not stale.exists() and fresh.exists() and kept_dir.exists()


@pytest.mark.django_db(transaction=True)
def test_a_requeued_job_whose_items_were_removed_fails_its_claim_with_the_reason(settings, multiplier_circuit,
                                                                                 params_dir):
    from gpu_engine import queue
    from tests.circom.registered import make_engine
    from tests.engine.helpers import all_final, running, wait_for

    settings.CIRCUIT_ITEMS_RETENTION_DAYS = 0
    circuit = register(multiplier_circuit, "mult", wasm=True, r1cs=False)
    cj = _finished_job(circuit, "expired", "failed", 0.001)
    assert housekeeping.housekeep().items == 1
    ProofJob.objects.filter(pk=cj.job_id).update(status="queued", finished_at=None, error="", attempts=0)
    assert queue.queue_depth() == 1
    with running(make_engine(params_dir)):
        wait_for(lambda: all_final(["expired"]), timeout=60)
    job = ProofJob.objects.get(job_id="expired")
    assert job.status == "failed" and "CIRCUIT_ITEMS_RETENTION_DAYS" in job.error, job.error
