"""An engine claims only what its stages can work on. With the CPU tail slower than the device part
(as on a real GPU: an H200 engine once held 86 jobs at once behind one finalizer, each job's latency
growing to a minute), the jobs it cannot start stay queued in the durable queue, where another
engine of the fleet can take them, and every job is still proved."""
from __future__ import annotations

import time

import pytest

from gpu_engine import queue
from gpu_engine.models import JobStatus, ProofJob
from tests.engine.helpers import all_final, running, wait_for

JOBS = 24
FINALIZE_SECS = 0.25   # one finalizer: at most 4 partitions a second leave the pipeline


@pytest.mark.django_db(transaction=True)
def test_a_slow_finalizer_does_not_make_the_engine_hoard_jobs(make_engine):
    ids = [queue.submit_job("window-post", f"hoard-{i}")[0].job_id for i in range(JOBS)]
    engine = make_engine(finalize_delay_secs=FINALIZE_SECS, workers_per_device=2, synth_workers=1, finalizers=1)
    # Window PoSt has one partition a job: held jobs are held partitions. The engine's cap: one
    # synthesis, and about two partitions per worker and per finalizer (being worked on or waiting).
    bound = 1 + 2 * 2 + 2 * 1
    peak, samples = 0, 0
    with running(engine):
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            held = ProofJob.objects.filter(job_id__in=ids, status=JobStatus.RUNNING).count()
            peak, samples = max(peak, held), samples + 1
            time.sleep(0.02)
        queued_meanwhile = ProofJob.objects.filter(job_id__in=ids, status=JobStatus.QUEUED).count()
        wait_for(lambda: all_final(ids), timeout=120)
    assert samples > 20 and peak >= 2, (samples, peak)   # it did prove in parallel
    assert peak <= bound, f"{peak} jobs held at once behind a slow finalizer (bound {bound})"
    assert queued_meanwhile > 0  # left for other engines while this one was busy
    assert ProofJob.objects.filter(job_id__in=ids, status=JobStatus.DONE).count() == JOBS
