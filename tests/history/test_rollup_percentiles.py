"""The 24 h and 7 d latency percentiles come from the per-hour rollup the history writer keeps, and
agree with the exact nearest-rank percentiles of the runs and jobs within the bucket resolution
(a bucket's middle is within 0.5% of every value in it); the SQL backfill builds the same rollup."""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from gpu_engine import history_rollup
from gpu_engine.engine.history import HistoryWriter
from gpu_engine.models import HistoryRollup, JobStatus, PartitionRun, ProofJob
from statuspanel.history import charts

ENGINE = "rollup-engine"
KINDS = ("snap-update", "porep-c2")
RESOLUTION = 0.005 + 1e-9  # half a bucket (1% wide)


def _at(t: float) -> datetime:
    return datetime.fromtimestamp(t, timezone.utc)


def _jobs(now: float, n: int = 40) -> list[ProofJob]:
    """Done jobs over the last 20 hours, latencies 30..400 s (spread, so the buckets matter)."""
    jobs = [ProofJob(job_id=f"r-{i}", proof_kind=KINDS[i % 2], status=JobStatus.DONE, claimed_by=ENGINE,
                     started_at=_at(now - i * 1800 - 30 - (i * 37) % 370), finished_at=_at(now - i * 1800))
            for i in range(n)]
    return ProofJob.objects.bulk_create(jobs)


def _run_fields(jobs: list[ProofJob], now: float, per_job: int = 60) -> list[dict]:
    """Proven partitions (and a few failed) whose latencies spread from 0.8 s to about 9 s."""
    out = []
    for j, job in enumerate(jobs):
        for k in range(per_job):
            end = now - j * 1800 - k * 7.3
            latency = 0.8 + ((j * per_job + k) * 7919 % 1000) / 120.0
            out.append({"job": job, "index": k, "state": "failed" if k == 5 else "done", "synth_ms": 200.0,
                        "gpu_ms": 400.0, "finalize_ms": 100.0, "worker_id": str(k % 4), "engine_id": ENGINE,
                        "proof_kind": job.proof_kind, "synth_started_at": _at(end - latency),
                        "gpu_started_at": _at(end - latency / 2), "gpu_ended_at": _at(end - 0.1),
                        "ended_at": _at(end)})
    return out


def _compare(approx: dict, exact: dict) -> None:
    for table in ("partitions", "jobs"):
        assert [r["kind"] for r in approx[table]] == [r["kind"] for r in exact[table]] and exact[table], table
        for a, e in zip(approx[table], exact[table]):
            assert a["n"] == e["n"], (table, a["kind"])
            assert a["p50"] == pytest.approx(e["p50"], rel=RESOLUTION), (table, a["kind"])
            assert a["p95"] == pytest.approx(e["p95"], rel=RESOLUTION), (table, a["kind"])


def _both(monkeypatch: pytest.MonkeyPatch, window: float, now: float) -> tuple[dict, dict]:
    """The chart from the rollup (forced past the exact threshold) and exact from the rows over the
    same window (the rollup's starts at the top of the hour)."""
    monkeypatch.setattr(charts, "EXACT_LATENCY_ROWS", 10)
    approx = charts.latency(ENGINE, window, now)
    monkeypatch.setattr(charts, "EXACT_LATENCY_ROWS", 10**9)
    monkeypatch.setattr(charts, "USE_ROLLUP", False)
    start = now - window
    exact = charts.latency(ENGINE, now - (start - start % 3600), now)
    monkeypatch.setattr(charts, "USE_ROLLUP", True)
    return approx, exact


@pytest.mark.django_db(transaction=True)
def test_writer_rollup_percentiles_agree_with_exact_ones(monkeypatch):
    now = time.time()
    jobs = _jobs(now)
    writer = HistoryWriter(name="rollup-test-writer")
    writer.start()
    try:
        for fields in _run_fields(jobs, now):
            writer.record_partition(**fields)
        for job in jobs:  # as the ledger does once a job is marked done
            writer.submit(lambda pk=job.pk: history_rollup.record_job_done(pk))
        assert writer.flush(30)
    finally:
        writer.stop()
    assert writer.errors == 0
    assert HistoryRollup.objects.filter(engine_id=ENGINE, measure=history_rollup.PARTITION).exists()
    for window in (charts.RANGES["24h"], charts.RANGES["7d"]):
        approx, exact = _both(monkeypatch, window, now)
        _compare(approx, exact)
    assert sum(r["n"] for r in approx["partitions"]) == len(jobs) * 59  # the failed runs are not latencies


@pytest.mark.django_db
def test_sql_backfill_builds_the_rollup_the_writer_builds(monkeypatch):
    now = time.time()
    jobs = _jobs(now)
    runs = PartitionRun.objects.bulk_create([PartitionRun(**f) for f in _run_fields(jobs, now)])
    history_rollup.record_runs(runs)
    for job in jobs:
        history_rollup.record_job_done(job.pk)

    def totals() -> dict:
        out: dict = {}
        for span, measure, period, kind, n in HistoryRollup.objects.values_list(
                "span_secs", "measure", "period", "proof_kind", "count"):
            key = (span, measure, period, kind)
            out[key] = out.get(key, 0) + n
        return out

    written = totals()
    monkeypatch.setattr(charts, "EXACT_LATENCY_ROWS", 10)
    by_writer = charts.latency(ENGINE, charts.RANGES["7d"], now)
    HistoryRollup.objects.all().delete()
    history_rollup.backfill(_at(now) - timedelta(days=8))
    assert totals() == written  # the same counts in the same minutes and hours
    by_backfill = charts.latency(ENGINE, charts.RANGES["7d"], now)
    for table in ("partitions", "jobs"):
        for w, b in zip(by_writer[table], by_backfill[table], strict=True):
            assert (w["kind"], w["n"]) == (b["kind"], b["n"])
            # The database's float seconds may put a value on the far side of a bucket edge.
            assert b["p50"] == pytest.approx(w["p50"], rel=0.0101) and b["p95"] == pytest.approx(w["p95"], rel=0.0101)
    _compare(by_backfill, _both(monkeypatch, charts.RANGES["7d"], now)[1])


@pytest.mark.django_db
def test_day_and_week_throughput_counts_every_done_job_from_the_rollup():
    now = time.time()
    jobs = _jobs(now)
    for job in jobs:
        history_rollup.record_job_done(job.pk)
    day = charts.throughput(ENGINE, now, 1440)
    week = charts.throughput(ENGINE, now, 7 * 1440)
    assert day["total"] == week["total"] == len(jobs)  # 20 hours of jobs, all within a day
    assert (day["bin_minutes"], week["bin_minutes"]) == (5, 60)
    assert len({b["x"] for b in day["bars"]}) <= 289 and len({b["x"] for b in week["bars"]}) <= 169
    assert sum(int(b["title"].rsplit(": ", 1)[1].split(" ")[0]) for b in week["bars"]) == len(jobs)
