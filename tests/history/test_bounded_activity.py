"""A busy engine's history costs bounded bytes: past EXACT_RUNS runs in a window, each lane is drawn
from buckets grouped in the database (at most BUCKETS bars, failures kept apart) with the lane's busy
share from the runs themselves; throughput is counted per minute in SQL and latency percentiles come
from a database histogram within 1% of the exact ones."""
from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from gpu_engine.models import JobStatus, PartitionRun, ProofJob
from statuspanel.history import buckets, charts
from statuspanel.history.timeline import EXACT_RUNS, build_timeline
from tests.history.helpers import timeline_rects

ENGINE = "busy-engine"
WORKERS = 8
PER_WORKER = 400  # 3,200 runs in ten minutes: a partition every 1.5 s on each worker


def _at(t: float) -> datetime:
    return datetime.fromtimestamp(t, timezone.utc)


def _seed(now: float) -> list[PartitionRun]:
    job = ProofJob.objects.create(job_id="busy-job", proof_kind="snap-update", status="done", claimed_by=ENGINE)
    runs = []
    for w in range(WORKERS):
        for k in range(PER_WORKER):
            g0 = now - 600 + k * 1.5 + w * 0.01
            runs.append(PartitionRun(job=job, index=k % 16, state="failed" if (w, k) == (3, 100) else "done",
                                     synth_ms=300, gpu_ms=1000 + k, finalize_ms=300, worker_id=str(w),
                                     gpu_ordinal=w // 2, engine_id=ENGINE, proof_kind="snap-update",
                                     synth_started_at=_at(g0 - 0.3), synth_ended_at=_at(g0), gpu_started_at=_at(g0),
                                     gpu_ended_at=_at(g0 + 1.0 + k / 1000), finalize_started_at=_at(g0 + 1.2),
                                     finalize_ended_at=_at(g0 + 1.45), ended_at=_at(g0 + 1.45)))
    PartitionRun.objects.bulk_create(runs, batch_size=2000)
    return runs


@pytest.mark.django_db
def test_busy_window_is_drawn_from_buckets_with_bounded_bytes(panel_client):
    now = time.time()
    runs = _seed(now)
    assert len(runs) > EXACT_RUNS
    body = panel_client.get(f"/panel/activity/{ENGINE}", {"window": "10m"}).content.decode()
    assert len(body) < 120_000, len(body)  # one bar per run would be megabytes
    tl = build_timeline(None, ENGINE, "10m", now=now + 1)
    assert tl.aggregated
    workers = [lane for lane in tl.lanes if lane.kind == "worker"]
    assert len(workers) == WORKERS
    for lane in tl.lanes:
        assert len(lane.bars) <= buckets.BUCKETS
    # Every run is counted in a bar of its lane, and the failure stands out in its own bar.
    assert sum(b.index for lane in workers for b in lane.bars) == len(runs)
    failed = [b for b in workers[3].bars if b.failed]
    assert len(failed) == 1 and "1 failed" in failed[0].title
    busy = sum((r.gpu_ended_at - r.gpu_started_at).total_seconds() for r in runs if r.worker_id == "0") / 600
    assert workers[0].busy_share == pytest.approx(busy, rel=1e-3)
    drawn = timeline_rects(body)
    assert any("partitions" in r["title"] for r in drawn)


@pytest.mark.django_db
def test_throughput_counts_every_job_per_minute_in_sql():
    now = time.time()
    jobs = [ProofJob(job_id=f"t-{i}", proof_kind=("snap-update", "porep-c2")[i % 2], status=JobStatus.DONE,
                     claimed_by=ENGINE, started_at=_at(now - 3000 + i), finished_at=_at(now - 3000 + i * 2))
            for i in range(900)]
    ProofJob.objects.bulk_create(jobs)
    chart = charts.throughput(ENGINE, now)
    assert chart["total"] == 900
    assert sum(int(b["title"].rsplit(": ", 1)[1].split("/")[0]) for b in chart["bars"]) == 900


@pytest.mark.django_db
def test_latency_of_many_runs_is_within_one_percent_of_exact(monkeypatch):
    now = time.time()
    runs = _seed(now)
    exact = charts.latency(ENGINE, 3600, now)
    monkeypatch.setattr(charts, "EXACT_LATENCY_ROWS", 100)
    approx = charts.latency(ENGINE, 3600, now)
    assert [r["n"] for r in approx["partitions"]] == [r["n"] for r in exact["partitions"]] == [len(runs) - 1]
    for a, e in zip(approx["partitions"], exact["partitions"]):
        assert a["p50"] == pytest.approx(e["p50"], rel=0.01) and a["p95"] == pytest.approx(e["p95"], rel=0.01)
