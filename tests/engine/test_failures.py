"""Failures: a device error requeues the partition and rebuilds the worker's backend; a partition
that keeps failing fails its job with the error text, and no worker is left shown proving."""
from __future__ import annotations

import threading

import pytest

from gpu_engine import backends, queue
from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.models import PartitionRun, ProofJob
from tests.engine.helpers import all_final, running, wait_for


class FlakyBackend(CpuBackend):
    """The real CPU backend, with a fault injected into its first `failures` device calls."""

    failures = 0
    lock = threading.Lock()
    error: type[Exception] = backends.DeviceError

    def compute_h(self, a, b, c):
        with FlakyBackend.lock:
            fail = FlakyBackend.failures > 0
            FlakyBackend.failures -= int(fail)
        if fail:
            raise FlakyBackend.error("injected fault: an illegal memory access was encountered")
        return super().compute_h(a, b, c)


@pytest.fixture
def flaky(monkeypatch):
    created = []

    def create(name, gpu_ordinal=0):
        created.append(gpu_ordinal)
        return FlakyBackend()

    monkeypatch.setattr(backends, "create_backend", create)
    return created


@pytest.mark.django_db(transaction=True)
def test_device_error_retries_partition_and_rebuilds_backend(make_engine, flaky):
    FlakyBackend.failures, FlakyBackend.error = 1, backends.DeviceError
    queue.submit_job("window-post", "flaky-device")
    engine = make_engine(workers_per_device=1)
    with running(engine):
        wait_for(lambda: all_final(["flaky-device"]))
        engine.history.flush(10)
        snap = engine.tracker.snapshot()
    job = ProofJob.objects.get(job_id="flaky-device")
    assert job.status == "done" and job.verified
    states = list(PartitionRun.objects.filter(job=job).values_list("state", flat=True))
    assert sorted(states) == ["done", "retried"]
    assert "illegal memory access" in PartitionRun.objects.get(job=job, state="retried").error
    assert len(flaky) == 2 + 1  # the worker's backend, its rebuild, and the finalizers' CPU backend
    assert snap["gpu_workers"][0]["state"] == "idle"


@pytest.mark.django_db(transaction=True)
def test_persistent_failure_fails_the_job_with_its_error(make_engine, flaky):
    FlakyBackend.failures, FlakyBackend.error = 10**6, ValueError
    queue.submit_job("winning-post", "always-fails")
    engine = make_engine(partition_attempts=3)
    events = []
    engine.add_listener(events.append)
    with running(engine):
        wait_for(lambda: all_final(["always-fails"]))
        wait_for(lambda: bool(events))
        engine.history.flush(10)
        snap = engine.tracker.snapshot()
    FlakyBackend.failures = 0
    job = ProofJob.objects.get(job_id="always-fails")
    assert job.status == "failed" and job.bundle is None
    assert "partition 0 failed 3 time(s)" in job.error and "injected fault" in job.error
    states = sorted(PartitionRun.objects.filter(job=job).values_list("state", flat=True))
    assert states == ["failed", "retried", "retried"]
    assert events[0].success is False and "injected fault" in events[0].error
    assert snap["counters"]["total_failed"] == 1 and snap["counters"]["failed_by_kind"] == {"winning-post": 1}
    pipe = snap["pipelines"][0]
    assert pipe["status"] == "failed" and "injected fault" in pipe["partitions"][0]["error"]
    assert all(w["state"] == "idle" for w in snap["gpu_workers"])
    assert engine.budget.used_bytes == 0
