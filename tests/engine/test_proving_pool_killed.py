"""A proving child killed mid-proof: the partition it held is retried, the pool is rebuilt, the job
still ends `done`, and no worker is left shown `proving`."""
from __future__ import annotations

import os
import signal
import time

import pytest

from gpu_engine import queue
from gpu_engine.models import PartitionRun, ProofJob
from tests.engine.helpers import all_final, running, wait_for


def kill_children_while_busy(engine, job_id: str, timeout: float = 60.0) -> int:
    """SIGKILL the pool's children while a call is in flight, until a partition was retried."""
    deadline = time.monotonic() + timeout
    kills = 0
    while time.monotonic() < deadline:
        if PartitionRun.objects.filter(job__job_id=job_id, state="retried").exists():
            return kills
        pids = engine.proving_pool.pids()
        if engine.proving_pool.inflight and pids:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            kills += 1
            engine.history.flush(10)
            time.sleep(0.3)
        else:
            time.sleep(0.001)
    raise AssertionError("no partition was retried after killing the proving processes")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_killed_proving_process_retries_the_partition(make_engine):
    queue.submit_job("porep-c2", "pool-killed")
    engine = make_engine(workers_per_device=2, finalizers=1, partition_attempts=5)
    with running(engine):
        kills = kill_children_while_busy(engine, "pool-killed")
        wait_for(lambda: all_final(["pool-killed"]), timeout=120)
        engine.history.flush(10)
        snap = engine.tracker.snapshot()
        rebuilds = engine.proving_pool.rebuilds
    job = ProofJob.objects.get(job_id="pool-killed")
    assert job.status == "done", job.error
    assert job.verified
    runs = PartitionRun.objects.filter(job=job)
    retried = list(runs.filter(state="retried").values_list("error", flat=True))
    assert retried and all("BrokenProcessPool" in e for e in retried), retried
    assert sorted(runs.filter(state="done").values_list("index", flat=True)) == list(range(10))
    assert 1 <= rebuilds <= kills
    assert all(w["state"] == "idle" for w in snap["gpu_workers"])
    assert engine.budget.used_bytes == 0
