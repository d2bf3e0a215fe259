"""The GPU timeline against a real CPU engine: its bars are the stored partition runs (start, end,
worker), a known idle stretch is drawn as a gap, and a reload rebuilds the same timeline."""
from __future__ import annotations

import time

import pytest

from gpu_engine import queue
from gpu_engine.models import PartitionRun
from statuspanel.history.timeline import build_timeline
from tests.engine.helpers import all_final, running, wait_for
from tests.history.helpers import timeline_rects

ENGINE = "test-engine"


def _prove(engine, jobs: list[tuple[str, str]]) -> None:
    for kind, job_id in jobs:
        queue.submit_job(kind, job_id)
    wait_for(lambda: all_final([j for _, j in jobs]), timeout=120)
    engine.history.flush(10)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_bars_match_stored_runs_and_a_reload_rebuilds_them(make_engine, publish, panel_client):
    jobs = [("window-post", "tl-wpost-1"), ("winning-post", "tl-win-1"), ("porep-c2", "tl-porep-with-a-long-id-0001")]
    engine = make_engine(workers_per_device=2, finalizers=2)
    with running(engine):
        _prove(engine, jobs)
        snap = publish(engine.tracker.snapshot(), ENGINE)
        runs = list(PartitionRun.objects.filter(engine_id=ENGINE).select_related("job"))
        assert len(runs) == 12 and all(r.state == "done" for r in runs)
        for r in runs:  # every phase's span is stored, in order, within the settlement
            assert r.synth_started_at <= r.synth_ended_at <= r.gpu_started_at <= r.gpu_ended_at
            assert r.gpu_ended_at <= r.finalize_started_at <= r.finalize_ended_at <= r.ended_at
            assert r.proof_kind == r.job.proof_kind

        tl = build_timeline(snap, ENGINE, "10m")
        worker_lanes = {lane.key: lane for lane in tl.lanes if lane.kind == "worker"}
        assert sorted(worker_lanes) == ["0", "1"]
        got = {(b.job_id, b.index, lane.key, b.start, b.end)
               for lane in worker_lanes.values() for b in lane.bars}
        want = {(r.job.job_id, r.index, r.worker_id, r.gpu_started_at.timestamp(), r.gpu_ended_at.timestamp())
                for r in runs}
        assert got == want
        finalize = {(b.job_id, b.index, b.start, b.end) for lane in tl.lanes if lane.kind == "finalizer"
                    for b in lane.bars}
        assert finalize == {(r.job.job_id, r.index, r.finalize_started_at.timestamp(), r.finalize_ended_at.timestamp())
                            for r in runs}
        for lane in worker_lanes.values():  # busy share: the lane's bars over the window
            busy = sum(b.end - b.start for b in lane.bars)
            assert lane.busy_share == pytest.approx(busy / 600.0)

        # The panel and a reload of it draw the same bars, each with the whole job id in its tooltip.
        pages = [panel_client.get(f"/panel/activity/{ENGINE}?window=10m").content.decode() for _ in range(2)]
        first, second = (sorted((r["data-job-id"], r["data-index"], r["data-worker"], r["data-phase"],
                                 r["data-start"], r["data-end"]) for r in timeline_rects(p)) for p in pages)
        assert first == second and len(first) == 24
        rendered = {(j, int(i), w, float(s), float(e)) for j, i, w, ph, s, e in first if ph == "gpu"}
        assert {(j, i, w, round(s, 3), round(e, 3)) for j, i, w, s, e in want} == rendered
        for rect in timeline_rects(pages[0]):
            assert rect["title"].splitlines()[0] == rect["data-job-id"]
        assert "tl-porep-with-a-long-id-0001" in pages[0]
        page = panel_client.get("/").content.decode()
        assert sorted(r["data-job-id"] for r in timeline_rects(page)) == sorted(j for j, *_ in first)


@pytest.mark.django_db(transaction=True)
def test_a_worker_idle_for_a_known_interval_shows_that_gap(make_engine, publish):
    engine = make_engine(workers_per_device=1)
    idle = 2.5
    with running(engine):
        _prove(engine, [("window-post", "gap-before")])
        time.sleep(idle)
        _prove(engine, [("window-post", "gap-after")])
        snap = publish(engine.tracker.snapshot(), ENGINE)
    before = PartitionRun.objects.get(job__job_id="gap-before")
    after = PartitionRun.objects.get(job__job_id="gap-after")
    tl = build_timeline(snap, ENGINE, "10m")
    (lane,) = [lane for lane in tl.lanes if lane.kind == "worker"]
    gaps = [(g.start, g.end) for g in lane.gaps]
    assert (before.gpu_ended_at.timestamp(), after.gpu_started_at.timestamp()) in gaps
    assert after.gpu_started_at.timestamp() - before.gpu_ended_at.timestamp() >= idle
    # No gap inside a bar, and the lane's busy share leaves the idle stretch out.
    assert lane.busy_share < 1 - idle / 600
