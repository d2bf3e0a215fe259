"""The engine on a real GPU (skipped without one; `make gpucheck` runs it): a mixed batch of jobs proved
by two workers sharing device 0's primary context, with more than one finalizer; every job done and
verified by the CPU verifier, and the partitions spread over both workers."""
from __future__ import annotations

import pytest

from gpu_engine import queue
from gpu_engine.models import JobStatus, PartitionRun, ProofJob
from tests.backends.helpers import requires_gpu
from tests.engine.conftest import make_engine  # noqa: F401 - the engine fixture
from tests.engine.helpers import all_final, running, wait_for

pytestmark = requires_gpu

KINDS = ("porep-c2", "snap-update", "window-post", "winning-post")


@pytest.mark.django_db(transaction=True)
def test_the_engine_proves_a_mixed_batch_on_the_gpu(make_engine):  # noqa: F811
    ids = [queue.submit_job(kind, f"gpu-engine-{i}")[0].job_id for i, kind in enumerate(KINDS * 3)]
    engine = make_engine(backend="cuda", workers_per_device=2, synth_workers=4, finalizers=2)
    with running(engine):
        wait_for(lambda: all_final(ids), timeout=240)
        engine.history.flush(10)
        snap = engine.tracker.snapshot()
    jobs = list(ProofJob.objects.filter(job_id__in=ids))
    assert [(j.job_id, j.status, j.verified) for j in jobs if j.status != JobStatus.DONE or not j.verified] == []
    runs = PartitionRun.objects.filter(job__in=jobs)
    assert set(runs.values_list("state", flat=True)) == {"done"}
    assert set(runs.values_list("worker_id", flat=True)) == {"0", "1"}
    assert snap["backend"] == "cuda" and all(w["state"] == "idle" for w in snap["gpu_workers"])
