"""Cancelling a running job stops its scheduling, releases what it holds, and stores no proof."""
from __future__ import annotations

import pytest

from gpu_engine import queue
from gpu_engine.models import PartitionRun, ProofJob
from tests.engine.helpers import running, wait_for


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_cancel_mid_proof_releases_everything(make_engine):
    queue.submit_job("snap-update", "cancel-me")
    queue.submit_job("window-post", "after-cancel")
    engine = make_engine(finalize_delay_secs=0.05)
    with running(engine):
        wait_for(lambda: PartitionRun.objects.filter(job__job_id="cancel-me", state="done").count() >= 2)
        queue.cancel_job("cancel-me")
        wait_for(lambda: "cancel-me" not in engine.active_jobs, timeout=30)
        wait_for(lambda: ProofJob.objects.get(job_id="after-cancel").status == "done", timeout=60)
        engine.history.flush(10)
        snap = engine.tracker.snapshot()
    job = ProofJob.objects.get(job_id="cancel-me")
    assert job.status == "cancelled" and job.bundle is None and not job.verified
    runs = PartitionRun.objects.filter(job=job)
    done = runs.filter(state="done").count()
    assert 2 <= done < 16, "cancellation came after the whole job was proved"
    assert engine.budget.used_bytes == 0
    pipe = next(p for p in snap["pipelines"] if p["job_id"] == "cancel-me")
    assert pipe["status"] == "cancelled"
    assert snap["counters"]["total_cancelled"] == 1 and snap["counters"]["total_failed"] == 0
    assert all(p["state"] in ("done", "failed") for p in pipe["partitions"])
    assert all(w["state"] == "idle" for w in snap["gpu_workers"])
