"""With the demo stream on, a user's job at its kind's default priority is claimed before every
queued demo job, and the demo kinds keep their order among themselves."""
from __future__ import annotations

import pytest

from gpu_engine import queue
from gpu_engine.console.demo import DemoFeeder, demo_priority
from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.models import ProofJob


@pytest.mark.django_db
def test_users_default_priority_job_is_claimed_before_queued_demo_jobs():
    DemoFeeder(depth=12, seed=3).top_up()
    user, _ = queue.submit_job("porep-c2", "user-job-1")  # the lowest default priority of the kinds
    assert queue.claim_next("engine-a").job_id == "user-job-1"
    assert user.priority > max(ProofJob.objects.exclude(pk=user.pk).values_list("priority", flat=True))


@pytest.mark.django_db
def test_demo_jobs_keep_their_kinds_order_below_every_default():
    priorities = {kind: demo_priority(kind) for kind in PROOF_KINDS}
    assert max(priorities.values()) < min(0, *(k.priority for k in PROOF_KINDS.values()))
    for a in PROOF_KINDS:
        for b in PROOF_KINDS:
            if PROOF_KINDS[a].priority < PROOF_KINDS[b].priority:
                assert priorities[a] < priorities[b], (a, b)
    DemoFeeder(depth=8, seed=5).top_up()
    for job in ProofJob.objects.all():
        assert job.priority == demo_priority(job.proof_kind)
