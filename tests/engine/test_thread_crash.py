"""An unexpected crash of an engine thread stops the engine (it does not run on without it, or hang):
the error is kept for `runprover` to exit with, and the held jobs go back to the queue."""
from __future__ import annotations

import pytest

from gpu_engine import queue
from gpu_engine.engine import workers
from gpu_engine.models import ProofJob
from tests.engine.helpers import wait_for


def crash_on_first_partition(monkeypatch) -> None:
    def device_part(self, work, backend):
        raise RuntimeError("injected: a bug in the worker loop")

    monkeypatch.setattr(workers.GpuWorker, "_device_part", device_part)


@pytest.mark.django_db(transaction=True)
def test_worker_crash_stops_the_engine_and_returns_held_jobs(make_engine, monkeypatch):
    crash_on_first_partition(monkeypatch)
    queue.submit_job("porep-c2", "held-when-crashed")
    engine = make_engine(workers_per_device=1)
    engine.start()
    assert engine.wait(60), "the engine did not stop after its worker crashed"
    assert engine.fatal_error == "engine thread 'worker-0' crashed: RuntimeError: injected: a bug in the worker loop"
    job = ProofJob.objects.get(job_id="held-when-crashed")
    assert (job.status, job.claimed_by, job.attempts) == ("queued", "", 0)
    assert engine.active_jobs == []


@pytest.mark.django_db(transaction=True)
def test_finalizer_crash_stops_the_engine(make_engine, monkeypatch):
    def finalize(self, work, out):
        raise KeyError("injected: a bug in the finalizer")

    monkeypatch.setattr(workers.Finalizers, "_finalize", finalize)
    queue.submit_job("window-post", "finalizer-crash")
    engine = make_engine(workers_per_device=1)
    engine.start()
    assert engine.wait(60)
    assert engine.fatal_error.startswith("engine thread 'finalizer' crashed: KeyError")
    wait_for(lambda: ProofJob.objects.get(job_id="finalizer-crash").status == "queued", timeout=10)
