"""Huge engines are drawn summarised and framed within the limit; a frame over it degrades that
engine's section, never the stream; a huge engine's renders never hold the others' frames back."""
from __future__ import annotations

import asyncio
import json
import threading

import pytest

from statuspanel.render.engine import render_engine_with_tally
from statuspanel.stream import frames


@pytest.fixture(autouse=True)
def _fresh(fresh_render_caches) -> None:
    frames._newest_seq.clear()


def _engine(workers: int = 2, partitions: int = 4, engine_id: str = "huge", seq: int = 1,
            error: str = "") -> dict:
    parts = [{"index": i, "state": "done", "synth_ms": 10.0, "gpu_ms": 5.0, "finalize_ms": 1.0, "worker_id": 0,
              "error": None} for i in range(partitions)]
    parts[-1] = {**parts[-1], "state": "failed", "error": error or "boom"}
    return {"engine_id": engine_id, "seq": seq, "backend": "cpu",
            "gpu_workers": [{"worker_id": i, "gpu_ordinal": i // 8, "state": "idle" if i else "error",
                             "error": "x" if not i else None, "busy_secs": 0} for i in range(workers)],
            "pipelines": [{"job_id": "job-1", "proof_kind": "snap-update", "status": "running",
                           "total_partitions": partitions, "partitions": parts}],
            "counters": {"total_completed": 1}}


def test_workers_beyond_the_cap_are_counted_not_drawn(settings):
    settings.PANEL_MAX_WORKER_CARDS = 10
    html, tally = render_engine_with_tally(_engine(workers=1500))
    assert html.count('class="worker state-') == 10
    assert 'data-hidden-workers="1490"' in html and "/api/status" in html
    assert 'data-worker-id="0"' in html  # the worker in error is among those shown
    assert tally["workers"] == {"proving": 0, "idle": 1499, "error": 1}


def test_partitions_beyond_the_cap_are_counted_and_failures_shown_first(settings):
    settings.PANEL_MAX_PARTITION_CELLS = 50
    html, tally = render_engine_with_tally(_engine(partitions=4000))
    assert html.count('class="cell phase-') == 50
    assert 'data-index="3999"' in html  # the failed partition, the last by index
    assert 'data-hidden-partitions="3950"' in html and "/api/jobs/job-1" in html
    assert tally["phases"]["done"] == 3999 and tally["phases"]["failed"] == 1
    assert ">0/4000<" not in html  # done counted over every partition, drawn or not


@pytest.mark.parametrize("snap", [_engine(workers=1500), _engine(partitions=4000),
                                  _engine(partitions=256, error="Assert Failed in Main line 34 " * 200)],
                         ids=["1500-workers", "4000-partitions", "256-batch-with-errors"])
@pytest.mark.parametrize("with_html", [True, False])
def test_every_frame_fits_the_limit(settings, snap, with_html):
    settings.WS_MAX_FRAME_BYTES = 256 * 1024
    frame = frames.snapshot_frame(snap, with_html=with_html)
    assert frames.frame_size(frame) <= 256 * 1024
    body = json.loads(frame)
    assert body["engine_id"] == "huge" and body["seq"] == 1 and ("html" in body) == with_html


def test_frame_over_the_limit_carries_the_summarised_snapshot(settings):
    settings.WS_MAX_FRAME_BYTES = 200 * 1024
    settings.PANEL_MAX_PARTITION_CELLS = 20
    body = json.loads(frames.snapshot_frame(_engine(partitions=4000), with_html=True))
    assert len(body["snapshot"]["pipelines"][0]["partitions"]) == 20
    assert body["snapshot"]["truncated"]["api"] == "/api/status"
    assert 'data-hidden-partitions="3980"' in body["html"]


def test_frame_that_cannot_fit_becomes_the_too_large_section(settings):
    settings.WS_MAX_FRAME_BYTES = 24 * 1024
    body = json.loads(frames.snapshot_frame(_engine(partitions=256, error="e" * 4000), with_html=True))
    assert len(json.dumps(body)) <= 24 * 1024
    assert "too large to show" in body["html"] and "data-tally=" in body["html"]
    assert "over the 24576-byte limit" in body["snapshot"]["truncated"]["reason"]
    assert "pipelines" not in body["snapshot"]


@pytest.mark.asyncio
async def test_huge_engine_render_does_not_hold_back_the_others(monkeypatch):
    release = threading.Event()
    real = frames.render_engine_with_tally

    def render(snap):
        if snap.get("engine_id") == "huge":
            release.wait(10)  # as if the huge engine's render took long
        return real(snap)

    monkeypatch.setattr(frames, "render_engine_with_tally", render)
    huge = json.dumps(_engine(workers=6000, seq=7))
    small = json.dumps(_engine(engine_id="small", seq=7))
    assert len(huge) > frames.LARGE_SNAPSHOT_CHARS
    slow = asyncio.ensure_future(frames.encoded_snapshot_frame_async("huge", 7, huge, with_html=True))
    await asyncio.sleep(0.05)
    try:
        frame = await asyncio.wait_for(frames.encoded_snapshot_frame_async("small", 7, small, with_html=True), 5)
        assert json.loads(frame)["engine_id"] == "small"
        assert not slow.done()
    finally:
        release.set()
    assert json.loads(await slow)["engine_id"] == "huge"


@pytest.mark.asyncio
async def test_build_overtaken_by_a_newer_snapshot_is_skipped(monkeypatch):
    release = threading.Event()
    real = frames.render_engine_with_tally

    def render(snap):
        if snap.get("seq") == 1:
            release.wait(10)
        return real(snap)

    monkeypatch.setattr(frames, "render_engine_with_tally", render)
    first = asyncio.ensure_future(frames.encoded_snapshot_frame_async("e", 1, json.dumps(_engine(engine_id="e")),
                                                                      with_html=True))
    await asyncio.sleep(0.05)
    queued = asyncio.ensure_future(frames.encoded_snapshot_frame_async("e", 2, json.dumps(_engine(engine_id="e", seq=2)),
                                                                       with_html=True))
    newest = asyncio.ensure_future(frames.encoded_snapshot_frame_async("e", 3, json.dumps(_engine(engine_id="e", seq=3)),
                                                                       with_html=True))
    await asyncio.sleep(0.05)
    release.set()
    assert json.loads(await first)["seq"] == 1  # already started: finished
    assert await queued is None  # overtaken before it started
    assert json.loads(await newest)["seq"] == 3
