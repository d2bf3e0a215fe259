"""Leases: renewed by the holder, expired ones go back to the queue, exhausted ones fail."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from gpu_engine import queue
from gpu_engine.models import ProofJob


def expire(job_id: str) -> None:
    ProofJob.objects.filter(job_id=job_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


@pytest.mark.django_db
def test_expired_lease_returns_job_to_queue_for_another_engine():
    queue.submit_job("porep-c2", "j1")
    queue.claim_next("engine-a")
    expire("j1")
    assert queue.requeue_expired() == (1, 0)
    job = ProofJob.objects.get(job_id="j1")
    assert job.status == "queued" and job.claimed_by == "" and job.attempts == 1
    again = queue.claim_next("engine-b")
    assert again.job_id == "j1" and again.attempts == 2


@pytest.mark.django_db
def test_live_lease_is_left_alone():
    queue.submit_job("porep-c2", "j2")
    queue.claim_next("engine-a", lease_secs=30)
    assert queue.requeue_expired() == (0, 0)
    assert ProofJob.objects.get(job_id="j2").status == "running"


@pytest.mark.django_db
@override_settings(JOB_MAX_ATTEMPTS=2)
def test_job_out_of_attempts_fails_with_message():
    queue.submit_job("porep-c2", "j3")
    for engine in ("engine-a", "engine-b"):
        assert queue.claim_next(engine).job_id == "j3"
        expire("j3")
        queue.requeue_expired()
    job = ProofJob.objects.get(job_id="j3")
    assert job.status == "failed"
    assert "expired on attempt 2 of 2" in job.error and "engine-b" in job.error


@pytest.mark.django_db
def test_renewal_extends_and_reports_lost_jobs():
    queue.submit_job("porep-c2", "j4")
    queue.submit_job("porep-c2", "j5")
    a = queue.claim_next("engine-a", lease_secs=1)
    b = queue.claim_next("engine-a", lease_secs=1)
    queue.cancel_job("j5")
    lost = queue.renew_leases("engine-a", [a.pk, b.pk], lease_secs=60)
    assert lost == {b.pk}
    assert ProofJob.objects.get(pk=a.pk).lease_expires_at > timezone.now() + timedelta(seconds=50)


@pytest.mark.django_db
def test_only_the_lease_holder_can_finish_the_job():
    queue.submit_job("window-post", "j6")
    job = queue.claim_next("engine-a")
    expire("j6")
    queue.requeue_expired()
    queue.claim_next("engine-b")
    assert not queue.complete_job(job.pk, "engine-a", {"stale": True}, {})
    assert not queue.fail_job(job.pk, "engine-a", "stale")
    assert not queue.return_job(job.pk, "engine-a")
    assert queue.complete_job(job.pk, "engine-b", {"fresh": True}, {"total_ms": 1})
    row = ProofJob.objects.get(pk=job.pk)
    assert row.status == "done" and row.bundle == {"fresh": True} and row.verified


@pytest.mark.django_db
def test_returned_job_does_not_spend_an_attempt():
    queue.submit_job("window-post", "j7")
    job = queue.claim_next("engine-a")
    assert queue.return_job(job.pk, "engine-a")
    row = ProofJob.objects.get(pk=job.pk)
    assert row.status == "queued" and row.attempts == 0


@pytest.mark.django_db
def test_cancelled_running_job_cannot_be_completed():
    queue.submit_job("window-post", "j8")
    job = queue.claim_next("engine-a")
    queue.cancel_job("j8")
    assert not queue.complete_job(job.pk, "engine-a", {"late": True}, {})
    assert ProofJob.objects.get(pk=job.pk).status == "cancelled"


@pytest.mark.django_db
@override_settings(JOB_MAX_ATTEMPTS=2)
def test_restarted_engine_requeues_its_orphans_within_the_attempt_limit():
    queue.submit_job("porep-c2", "o1")
    queue.submit_job("porep-c2", "o2")
    queue.submit_job("porep-c2", "theirs")
    queue.claim_next("engine-a")
    queue.claim_next("engine-a")
    queue.claim_next("engine-b")
    ProofJob.objects.filter(job_id="o2").update(attempts=2)
    assert queue.requeue_orphans("engine-a") == (1, 1)
    statuses = dict(ProofJob.objects.values_list("job_id", "status"))
    assert statuses == {"o1": "queued", "o2": "failed", "theirs": "running"}
    assert "restarted while holding the job" in ProofJob.objects.get(job_id="o2").error
