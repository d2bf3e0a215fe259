"""Split proving under a slow finalizer: a partition in `gpu` always names a worker proving it.

The cuzk bug: a late finalizer cleared its worker's busy flag by worker id while that worker was
already proving the next partition. Here the finalizer is slowed down on purpose so that window is
open all the time, and snapshots are sampled throughout.
"""
from __future__ import annotations

import threading

import pytest

from gpu_engine import queue
from gpu_engine.models import ProofJob
from tests.engine.helpers import all_final, running, wait_for


def check(snapshot: dict, overlaps: list[int]) -> None:
    workers = {w["worker_id"]: w for w in snapshot["gpu_workers"]}
    in_gpu = set()
    for pipe in snapshot["pipelines"]:
        for part in pipe["partitions"]:
            if part["state"] == "gpu":
                w = workers[part["worker_id"]]
                assert w["state"] == "proving", (pipe["job_id"], part, w)
                assert (w["current_job"], w["current_partition"]) == (pipe["job_id"], part["index"])
                in_gpu.add((pipe["job_id"], part["index"]))
            if part["state"] == "finalizing":
                w = workers[part["worker_id"]]
                if w["state"] == "proving":
                    overlaps.append(1)  # the worker already moved on while its old partition finalizes
    for w in workers.values():
        if w["state"] == "proving":
            assert (w["current_job"], w["current_partition"]) in in_gpu, w


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_worker_shown_proving_while_its_previous_partition_finalizes(make_engine):
    job_ids = [queue.submit_job("porep-c2", f"race-{i}")[0].job_id for i in range(2)]
    engine = make_engine(workers_per_device=2, finalizers=1, finalize_delay_secs=0.4)
    samples, overlaps, errors = [0], [], []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                check(engine.tracker.snapshot(), overlaps)
                samples[0] += 1
            except AssertionError as exc:
                errors.append(exc)
                return
            stop.wait(0.002)

    sampler = threading.Thread(target=sample)
    with running(engine):
        sampler.start()
        try:
            wait_for(lambda: errors or all_final(job_ids), timeout=180)
        finally:
            stop.set()
            sampler.join()
    assert not errors, errors[0]
    assert samples[0] > 100
    assert overlaps, "the finalizer never lagged behind the device part; the race window was not exercised"
    assert all(ProofJob.objects.get(job_id=j).status == "done" for j in job_ids)
