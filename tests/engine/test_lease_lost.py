"""An engine whose lease was taken over stops the job and never writes over the new owner's row."""
from __future__ import annotations

import pytest

from gpu_engine import queue
from gpu_engine.models import PartitionRun, ProofJob
from tests.engine.helpers import running, wait_for


@pytest.mark.django_db(transaction=True)
def test_taken_over_job_is_dropped_without_a_write(make_engine):
    queue.submit_job("snap-update", "taken-over")
    engine = make_engine(finalize_delay_secs=0.05)
    events = []
    engine.add_listener(events.append)
    with running(engine):
        wait_for(lambda: PartitionRun.objects.filter(job__job_id="taken-over", state="done").exists())
        # As if this engine stalled past its lease and another engine re-claimed the job.
        ProofJob.objects.filter(job_id="taken-over").update(claimed_by="engine-other", attempts=2)
        wait_for(lambda: bool(events), timeout=30)
        assert engine.active_jobs == []
    job = ProofJob.objects.get(job_id="taken-over")
    assert (job.status, job.claimed_by, job.bundle, job.error) == ("running", "engine-other", None, "")
    assert events[0].success is False and "lease lost" in events[0].error
    assert engine.budget.used_bytes == 0
