"""A real CPU engine keeps the history rollup as it proves: every proven partition and every done
job is counted once, in its hour, kind and latency bucket, so the 24 h and 7 d charts (read from the
rollup) show what the 1 h chart (read from the rows) shows."""
from __future__ import annotations

import time

import pytest

from gpu_engine import history_rollup, queue
from gpu_engine.models import HistoryRollup, PartitionRun, ProofJob
from statuspanel.history import charts
from tests.engine.helpers import all_final, running, wait_for

ENGINE = "test-engine"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_engine_counts_each_run_and_job_into_the_rollup(make_engine, monkeypatch):
    jobs = [("window-post", "ru-wpost-1"), ("winning-post", "ru-win-1"), ("porep-c2", "ru-porep-1")]
    engine = make_engine(workers_per_device=2, finalizers=2)
    with running(engine):
        for kind, job_id in jobs:
            queue.submit_job(kind, job_id)
        wait_for(lambda: all_final([j for _, j in jobs]), timeout=120)
        engine.history.flush(10)
    runs = PartitionRun.objects.filter(engine_id=ENGINE, state="done")

    def counted(measure: str, span: int) -> dict[str, int]:
        out: dict[str, int] = {}
        for kind, n in HistoryRollup.objects.filter(engine_id=ENGINE, measure=measure, span_secs=span).values_list(
                "proof_kind", "count"):
            out[kind] = out.get(kind, 0) + n
        return out

    per_kind = {k: runs.filter(proof_kind=k).count() for k, _ in jobs}
    assert counted(history_rollup.PARTITION, history_rollup.HOUR) == per_kind
    done = {k: ProofJob.objects.filter(proof_kind=k, status="done").count() for k, _ in jobs}
    assert done == dict.fromkeys(done, 1)
    for span in (history_rollup.MINUTE, history_rollup.HOUR):
        assert counted(history_rollup.DONE, span) == done
    assert counted(history_rollup.JOB, history_rollup.HOUR) == done
    monkeypatch.setattr(charts, "EXACT_LATENCY_ROWS", 0)  # from the rollup however few
    now = time.time()
    day, hour = charts.latency(ENGINE, charts.RANGES["24h"], now), charts.latency(ENGINE, charts.RANGES["1h"], now)
    for table in ("partitions", "jobs"):
        assert [(r["kind"], r["n"]) for r in day[table]] == [(r["kind"], r["n"]) for r in hour[table]]
        for d, h in zip(day[table], hour[table]):
            assert d["p95"] == pytest.approx(h["p95"], rel=0.005 + 1e-9)
