"""The engine partial: full ids and labels, failed cells with their error, gauges, foreign snapshots."""
from __future__ import annotations

import html
import re

import pytest

from statuspanel.render import engine as rendering
from statuspanel.render.engine import engine_context, render_engine
from tests.panel.helpers import SNAP_JOB, busy_tracker, cuzk_fixture

pytestmark = pytest.mark.usefixtures("fresh_render_caches")


def _cell(markup: str, index: int) -> str:
    m = re.search(rf'<span class="cell [^"]*" data-index="{index}" data-state="(\w+)" title="([^"]*)"', markup)
    assert m, f"no cell {index}"
    return m.group(1), html.unescape(m.group(2))


def test_cuzk_fixture_renders_with_full_job_ids():
    markup = render_engine(cuzk_fixture())
    assert f'title="{SNAP_JOB}"' in markup
    assert f">{SNAP_JOB}<" in markup
    assert ">ps-snap-1000-43-8<" in markup
    assert "SnapDeals Update (ReplicaUpdate)" in markup  # label derived from the kind for foreign workers
    assert 'data-worker-id="0" data-state="proving" data-job-id="ps-snap-1000-42-7" data-partition="5"' in markup
    assert _cell(markup, 5)[0] == "gpu"
    assert "unnamed-engine" in markup  # no engine_id in a cuzk snapshot


def test_failed_partition_shows_its_error_in_title():
    snap = busy_tracker().snapshot()
    markup = render_engine(snap)
    state, title = _cell(markup, 2)
    assert state == "failed"
    assert "MSM kernel launch failed: out of memory on GPU 0 <&>" in title
    assert "<&>" not in markup.split("MSM kernel launch failed", 1)[1][:40]  # escaped in the markup


def test_our_snapshot_shows_proving_worker_with_full_id_label_and_live_busy_time():
    markup = render_engine(busy_tracker().snapshot())
    m = re.search(r'<article class="worker state-proving"[^>]*data-job-id="([^"]+)" data-partition="1">(.*?)</article>',
                  markup, re.S)
    assert m and m.group(1) == SNAP_JOB
    card = m.group(2)
    assert f'<div class="job-id" title="{SNAP_JOB}">{SNAP_JOB}</div>' in card
    assert "SnapDeals Update (ReplicaUpdate)" in card
    assert 'class="live" data-live-secs=' in card
    assert _cell(markup, 1)[0] == "gpu"


@pytest.mark.parametrize("used,level", [(50, "green"), (59, "green"), (60, "yellow"), (84, "yellow"),
                                        (85, "red"), (100, "red")])
def test_memory_gauge_levels(used, level):
    ctx = engine_context({"memory": {"total_bytes": 100, "used_bytes": used}})
    assert ctx["memory"]["level"] == level
    assert f"gauge-{level}" in render_engine({"memory": {"total_bytes": 100, "used_bytes": used}})


@pytest.mark.parametrize("snap", [{}, {"pipelines": None, "gpu_workers": [None], "counters": "x"},
                                  {"pipelines": [{"partitions": [{}]}], "memory": {"total_bytes": 0}}])
def test_sparse_or_odd_snapshots_render(snap):
    assert 'data-region="header"' in render_engine(snap)


def test_gpu_telemetry_shown_when_reported():
    t = busy_tracker()
    t.set_gpus([{"ordinal": 0, "name": "NVIDIA H200", "util_pct": 97.0, "mem_used_bytes": 70 << 30,
                 "mem_total_bytes": 141 << 30, "temp_c": 61.0, "power_w": 512.0}])
    markup = render_engine(t.snapshot())
    assert 'data-region="gpus"' in markup and "NVIDIA H200" in markup and "61 °C" in markup and "512 W" in markup
    assert 'data-region="gpus"' not in render_engine(busy_tracker().snapshot())


def test_render_is_cached_per_engine_and_seq():
    snap = dict(busy_tracker().snapshot(), engine_id="e1", seq=41)
    first = render_engine(snap)
    assert render_engine(dict(snap)) is first
    assert rendering.html_cache.misses == 1 and rendering.html_cache.hits == 1
    render_engine(dict(snap, seq=42))
    assert rendering.html_cache.misses == 2
