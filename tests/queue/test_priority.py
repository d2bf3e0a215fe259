"""Claim order: winning-post > window-post > porep-c2 = snap-update, then oldest first."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from gpu_engine import queue
from gpu_engine.models import ProofJob


@pytest.mark.django_db
def test_claims_by_kind_priority_then_age():
    base = timezone.now()
    order = [("porep-c2", "p-old"), ("snap-update", "s-mid"), ("window-post", "wd"), ("porep-c2", "p-new"),
             ("winning-post", "win")]
    for i, (kind, job_id) in enumerate(order):
        job, _ = queue.submit_job(kind, job_id)
        ProofJob.objects.filter(pk=job.pk).update(submitted_at=base + timedelta(seconds=i))
    claimed = []
    while (job := queue.claim_next("engine-a", lease_secs=30)) is not None:
        claimed.append(job.job_id)
    assert claimed == ["win", "wd", "p-old", "s-mid", "p-new"]


@pytest.mark.django_db
def test_explicit_priority_overrides_kind():
    queue.submit_job("winning-post", "win")
    queue.submit_job("porep-c2", "urgent-porep", priority=100)
    assert queue.claim_next("engine-a").job_id == "urgent-porep"


@pytest.mark.django_db
def test_claim_records_engine_lease_and_attempt():
    queue.submit_job("window-post", "wd1")
    before = timezone.now()
    job = queue.claim_next("engine-a", lease_secs=30)
    assert job.status == "running" and job.claimed_by == "engine-a" and job.attempts == 1
    assert job.lease_expires_at >= before + timedelta(seconds=29)
    assert queue.claim_next("engine-b") is None
