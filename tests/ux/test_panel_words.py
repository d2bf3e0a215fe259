"""The panel's words and numbers, rendered without a browser: a job's partitions counted as the API
counts its runs (failed apart from never run), its failure reason written out, phase sums marked Σ,
the header's update age in place of a sequence number, no rate before there is one, a young
engine's day chart starting at its first proof, and axis ticks kept clear of the timeline's ends."""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from gpu_engine import history_rollup, queue
from gpu_engine.models import JobStatus, ProofJob
from statuspanel.history import charts
from statuspanel.render.engine import pipeline_context, render_engine
from statuspanel.render.fleet import RateMeter
from statuspanel.templatetags.panel_tags import axis_time, in_range

REASON = "partition 3 failed 3 time(s); last: RuntimeError: injected fault"


def _part(index: int, state: str, **ms: float | None) -> dict:
    return {"index": index, "state": state, "synth_ms": ms.get("synth"), "gpu_ms": ms.get("gpu"),
            "finalize_ms": ms.get("fin"), "worker_id": 0 if ms else None,
            "error": REASON if state == "failed" and ms else ("not run: job failed" if state == "failed" else None)}


def _snapshot() -> dict:
    parts = [_part(0, "done", synth=900.0, gpu=800.0, fin=300.0), _part(1, "failed", synth=50.0),
             _part(2, "failed"), _part(3, "failed")]
    return {"engine_id": "words-engine", "seq": 4, "published_at": time.time(), "heartbeat_secs": 2.0,
            "backend": "cpu", "uptime_secs": 30.0,
            "pipelines": [{"job_id": "job-words-1", "proof_kind": "porep-c2", "status": "failed",
                           "started_secs_ago": 2.0, "finished_secs_ago": 0.5, "total_partitions": 4,
                           "partitions_done": 1, "partitions": parts}],
            "gpu_workers": [], "counters": {"total_completed": 0, "queue_depth": 2}}


def test_failed_partitions_are_counted_apart_from_those_never_run():
    ctx = pipeline_context(_snapshot()["pipelines"][0])
    assert (ctx["partitions_done"], ctx["partitions_failed"], ctx["partitions_not_run"]) == (1, 1, 2)
    assert ctx["reason"] == REASON  # the cause, not the "not run" echo of it


def test_engine_partial_writes_reason_sums_and_update_age():
    html = render_engine(_snapshot())
    assert '(1 failed)' in html and '(2 not run)' in html
    assert f'<div class="reason" title="{REASON}">{REASON}</div>' in html
    assert "Σ synth" in html and "Σ gpu" in html and "Σ finalize" in html
    assert 'data-updated-at="' in html and 'class="seq"' not in html and "#4" not in html


def test_cuzk_like_snapshot_without_backend_gets_no_backend_tag():
    snap = {**_snapshot(), "backend": "", "engine_id": "words-cuzk", "seq": 1}  # a render of its own
    assert 'class="tag backend"' not in render_engine(snap)


def test_no_rate_until_one_can_be_told():
    meter = RateMeter()
    assert meter.observe("e", 100.0, 6) is None
    assert meter.observe("e", 130.0, 6) is None   # 30 s, nothing done in it: not "0.0" yet
    assert meter.observe("e", 170.0, 6) == 0.0    # a whole minute with nothing done: now it is 0
    assert meter.observe("e", 180.0, 9) == pytest.approx(60.0 * 3 / 80)


@pytest.mark.django_db
def test_a_young_engines_day_chart_starts_at_its_first_proof():
    now = time.time()
    for i, ago in enumerate((600, 300, 60)):
        job, _ = queue.submit_job("window-post", f"young-{i}")
        finished = datetime.fromtimestamp(now - ago, timezone.utc)
        ProofJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE, claimed_by="young-engine",
                                                  started_at=finished - timedelta(seconds=1), finished_at=finished)
        history_rollup.record_job_done(job.pk)  # as the engine's ledger does: a day's chart reads the rollup
    day = charts.throughput("young-engine", now=now, minutes=1440)
    assert day["end"] - day["start"] == pytest.approx(3600, abs=300)  # an hour, not 24: bars are visible
    assert day["total"] == 3 and day["bucket_minutes"] == 5  # the rollup's 5-minute bins over a day
    assert min(b["x"] for b in day["bars"]) > 0.0
    empty = charts.throughput("nobody", now=now, minutes=1440)
    assert empty["end"] - empty["start"] >= 86400 and empty["bucket_minutes"] == 5


def test_axis_ticks_stay_clear_of_the_ends_and_times_say_the_date_over_days():
    ticks = [{"x_pct": x, "label": str(x)} for x in (2.0, 10.0, 50.0, 89.0, 96.0)]
    assert [t["x_pct"] for t in in_range(ticks, "8,90")] == [10.0, 50.0, 89.0]
    start = datetime(2026, 3, 1, 7, 5, tzinfo=timezone.utc).timestamp()
    assert axis_time(start, start + 3600) == "07:05"
    assert axis_time(start, start + 86400) == "Mar 01 07:05"
