"""A local engine (the real engine on the CPU backend) whose jobs fail: `failure-burst` fires for
it with the reasons of the last failures in its message; `requeue-loop` names a job claimed again
and again with its attempts and errors."""
from __future__ import annotations

import threading

import pytest
from django.utils import timezone

from gpu_engine import backends, queue
from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.engine import Engine, EngineConfig
from gpu_engine.models import ProofJob
from statuspanel.alerts.evaluator import Evaluator
from statuspanel.alerts.models import Alert
from tests.engine.helpers import all_final, running, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


class FailingBackend(CpuBackend):
    """The real CPU backend whose device step always fails, as a broken GPU would."""

    lock = threading.Lock()

    def compute_h(self, a, b, c):
        raise ValueError("injected fault: an illegal memory access was encountered")


def _evaluate(snaps) -> None:
    evaluator = Evaluator(snapshots=lambda: snaps)
    assert evaluator.lease.acquire_or_renew()
    evaluator.evaluate_once()


def test_failing_jobs_of_a_local_engine_fire_failure_burst_with_reasons(params_dir, monkeypatch) -> None:
    monkeypatch.setattr(backends, "create_backend", lambda name, gpu_ordinal=0: FailingBackend())
    ids = [f"doomed-{i}" for i in range(3)]
    for job_id in ids:
        queue.submit_job("winning-post", job_id)
    engine = Engine(EngineConfig(engine_id="box-local", backend="cpu", gpus=[0], workers_per_device=1,
                                 synth_workers=1, params_dir=params_dir, scale=1, lease_secs=5.0, heartbeat_secs=0.2,
                                 poll_secs=0.05, drain_secs=10.0, grace_secs=60.0, partition_attempts=1))
    with running(engine):
        wait_for(lambda: all_final(ids))
        engine.history.flush(10)
        snap = dict(engine.tracker.snapshot(), engine_id="box-local")
    assert set(ProofJob.objects.values_list("status", flat=True)) == {"failed"}
    _evaluate([snap])
    alert = Alert.objects.get(rule="failure-burst")
    assert alert.state == "firing" and alert.engine == "box-local" and alert.value == 3
    assert alert.message.startswith("3 failures on box-local within 10m 00s; last: job doomed-")
    assert "injected fault" in alert.message


def test_a_job_claimed_three_times_fires_requeue_loop() -> None:
    queue.submit_job("winning-post", "bouncing")
    ProofJob.objects.filter(job_id="bouncing").update(attempts=3, claimed_by="box-a",
                                                       error="lease of engine 'box-a' expired on attempt 2 of 5",
                                                       submitted_at=timezone.now())
    _evaluate([])
    alert = Alert.objects.get(rule="requeue-loop")
    assert alert.subject == "bouncing" and alert.value == 3 and alert.state == "firing"
    assert "claimed 3 times (last by box-a)" in alert.message and "lease of engine 'box-a' expired" in alert.message
