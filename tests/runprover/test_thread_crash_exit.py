"""`runprover` exits non-zero with the error when an engine thread crashes (it used to exit 0, or
hang), after returning its held jobs to the queue."""
from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from gpu_engine import queue
from gpu_engine.engine import workers
from gpu_engine.models import ProofJob


@pytest.mark.django_db(transaction=True)
def test_runprover_exits_non_zero_after_a_thread_crash(settings, params_dir, monkeypatch):
    settings.PARAMS_DIR = params_dir

    def device_part(self, work, backend):
        raise RuntimeError("injected: a bug in the worker loop")

    monkeypatch.setattr(workers.GpuWorker, "_device_part", device_part)
    queue.submit_job("snap-update", "crash-held")
    out = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("runprover", "--no-serve", "--backend", "cpu", "--synth-workers", "1", "--proving-processes", "0",
                     "--engine-id", "crash-engine", stdout=out)
    assert caught.value.returncode == 1
    assert str(caught.value) == ("engine thread 'worker-0' crashed: RuntimeError: injected: a bug in the worker loop; "
                                 "held jobs were returned to the queue (see the log above)")
    job = ProofJob.objects.get(job_id="crash-held")
    assert (job.status, job.claimed_by, job.attempts) == ("queued", "", 0)
