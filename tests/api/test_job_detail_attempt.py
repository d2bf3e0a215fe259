"""GET /api/jobs/<id> says which claim each partition run belongs to: a job re-proved after a crash
has two "done" rows per partition, told apart by `attempt`."""
from __future__ import annotations

import pytest

from gpu_engine.models import JobStatus, PartitionRun, ProofJob
from tests.credentials import AUTH


@pytest.mark.django_db
def test_partition_runs_carry_their_attempt(client):
    job = ProofJob.objects.create(job_id="reproved-2", proof_kind="window-post", status=JobStatus.DONE, attempts=2)
    for attempt in (1, 2):
        PartitionRun.objects.create(job=job, index=0, attempt=attempt, state="done", worker_id="0",
                                    engine_id="engine-x", proof_kind="window-post")
    runs = client.get("/api/jobs/reproved-2", **AUTH).json()["partition_runs"]
    assert sorted((r["index"], r["attempt"], r["state"]) for r in runs) == [(0, 1, "done"), (0, 2, "done")]
