"""A job re-proved after a crash has one history row per partition and claim: the attempt number tells
them apart in the admin's runs and in the timeline's tooltips."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from gpu_engine.models import JobStatus, PartitionRun, ProofJob
from statuspanel.history.timeline import stored_bars


@pytest.fixture
def reproved(db) -> ProofJob:
    now = timezone.now()
    job = ProofJob.objects.create(job_id="reproved-1", proof_kind="window-post", status=JobStatus.DONE, attempts=2,
                                  claimed_by="engine-x")
    for attempt, ago in ((1, 30), (2, 10)):
        start = now - timedelta(seconds=ago)
        PartitionRun.objects.create(job=job, index=0, attempt=attempt, state="done", worker_id="0",
                                    engine_id="engine-x", proof_kind="window-post", gpu_started_at=start,
                                    gpu_ended_at=start + timedelta(seconds=1), ended_at=start + timedelta(seconds=2))
    return job


def test_admin_shows_each_rows_attempt(client, reproved):
    client.force_login(get_user_model().objects.create_superuser("root", "r@example.invalid", "pw-test-only"))
    body = client.get(f"/admin/gpu_engine/proofjob/{reproved.pk}/change/").content.decode()
    cells = re.findall(r'<td class="field-attempt">\s*<p>(\d+)</p>', body)
    assert sorted(cells) == ["1", "2"]


def test_timeline_tooltips_name_the_attempt(reproved):
    bars = stored_bars("engine-x", (timezone.now() - timedelta(minutes=5)).timestamp())
    titles = sorted(bar.title for bar in bars)
    assert len(titles) == 2 and "attempt 1" in titles[0] and "attempt 2" in titles[1]
    assert all("partition 0 · W0 · done" in t for t in titles)
