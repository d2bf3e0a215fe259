"""The history page offers 1 h, 24 h and 7 d; the 7 d page renders its charts from the rollup
(hourly throughput bars, latency tables) and an unknown range is a 400 naming the three."""
from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from gpu_engine import history_rollup
from gpu_engine.models import JobStatus, PartitionRun, ProofJob

ENGINE = "week-engine"


def _at(t: float) -> datetime:
    return datetime.fromtimestamp(t, timezone.utc)


@pytest.mark.django_db
def test_week_page_renders_throughput_and_latency_from_the_rollup(panel_client):
    now = time.time()
    jobs = ProofJob.objects.bulk_create([  # a job every 26 h: one in the last day, six in the week
        ProofJob(job_id=f"w-{i}", proof_kind="window-post", status=JobStatus.DONE, claimed_by=ENGINE,
                 started_at=_at(now - i * 95_000 - 40), finished_at=_at(now - i * 95_000)) for i in range(6)])
    runs = PartitionRun.objects.bulk_create([
        PartitionRun(job=job, index=0, state="done", engine_id=ENGINE, proof_kind="window-post",
                     synth_started_at=_at(now - i * 95_000 - 30), ended_at=_at(now - i * 95_000))
        for i, job in enumerate(jobs)])
    history_rollup.record_runs(runs)
    for job in jobs:
        history_rollup.record_job_done(job.pk)
    response = panel_client.get(f"/history/{ENGINE}", {"range": "7d"})
    assert response.status_code == 200
    body = response.content.decode()
    assert 'href="?range=7d"' in body and 'class="tl-window on" href="?range=7d"' in body
    assert 'data-total="6"' in body  # every job of the week in the throughput chart
    assert body.count('data-kind="window-post"') == 2  # partition and job latency rows
    assert "in 60 min" in body  # hourly bars
    day = panel_client.get(f"/history/{ENGINE}", {"range": "24h"}).content.decode()
    assert 'data-total="1"' in day and "in 5 min" in day


@pytest.mark.django_db
def test_unknown_range_is_a_bad_request_naming_the_ranges(panel_client):
    response = panel_client.get(f"/history/{ENGINE}", {"range": "30d"})
    assert response.status_code == 400
    assert response.content.decode() == "range must be one of 1h, 24h, 7d"
