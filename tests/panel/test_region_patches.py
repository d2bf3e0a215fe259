"""Patch frames carry the smallest regions that changed: a ticking duration is no change, a partition
that moves on costs its cell, a new job its row and the list's new order; a section that is not what
the templates make is never patched (full frames), and each engine's last frames stay held however
many engines share the process."""
from __future__ import annotations

import json
import time
from typing import Any

import pytest

from gpu_engine.tracker import StatusTracker
from statuspanel.render.engine import render_engine_with_tally
from statuspanel.stream import patches
from tests.panel.helpers import SNAP_JOB, busy_tracker

pytestmark = pytest.mark.usefixtures("fresh_render_caches")


@pytest.fixture(autouse=True)
def fresh_patches():
    patches.clear()
    yield
    patches.clear()


class Engine:
    """One engine's snapshots, rendered and held as the stream holds them."""

    def __init__(self, tracker: StatusTracker, engine_id: str = "eng-r") -> None:
        self.tracker, self.engine_id, self.seq = tracker, engine_id, 0

    def publish(self) -> int:
        self.seq += 1
        snap: dict[str, Any] = {**self.tracker.snapshot(), "engine_id": self.engine_id, "seq": self.seq,
                                "published_at": time.time(), "heartbeat_secs": 2.0}
        html, _tally = render_engine_with_tally(snap)
        sections = patches.split_sections(html, snap.get("counters"))
        assert sections is not None, "the engine section must split into its regions"
        patches.hold(self.engine_id, self.seq, True, sections)
        return self.seq

    def patch(self, base: int, seq: int) -> dict[str, Any]:
        frame = patches.patch_frame(self.engine_id, base, seq, True)
        assert frame is not None
        return json.loads(frame)


def test_time_passing_alone_is_no_change():
    engine = Engine(busy_tracker())  # a partition on the GPU, one synthesizing: durations grow
    first = engine.publish()
    time.sleep(0.25)
    patch = engine.patch(first, engine.publish())
    assert patch["regions"] == {} and "lists" not in patch
    assert set(patch["attrs"]) == {"data-seq", "data-published-at"}


def test_a_partition_that_moves_on_costs_its_cell_not_the_table():
    tracker = busy_tracker()
    engine = Engine(tracker)
    first = engine.publish()
    tracker.partition_synth_end(SNAP_JOB, 3)
    patch = engine.patch(first, engine.publish())
    assert f"cell:3:{SNAP_JOB}" in patch["regions"]
    assert not {"pipelines", "pipeline-rows", f"job:{SNAP_JOB}", "workers"} & set(patch["regions"])
    cell = patch["regions"][f"cell:3:{SNAP_JOB}"]
    assert 'data-state="synth_done"' in cell and cell.startswith("<span")


def test_a_new_job_sends_its_row_and_the_new_order_of_the_rows():
    tracker = busy_tracker()
    engine = Engine(tracker)
    first = engine.publish()
    tracker.register_job("ps-new-job-9", "window-post", 2)
    patch = engine.patch(first, engine.publish())
    rows = patch["lists"]["pipeline-rows"]
    assert set(rows) == {f"job:{SNAP_JOB}", "job:ps-new-job-9"}
    assert patch["regions"]["job:ps-new-job-9"].startswith("<tr")
    assert f"job:{SNAP_JOB}" not in patch["regions"]  # an unchanged row moves, it is not sent again


def test_a_worker_that_changes_state_costs_its_card():
    tracker = busy_tracker()
    engine = Engine(tracker)
    first = engine.publish()
    tracker.partition_synth_end(SNAP_JOB, 3)
    tracker.partition_gpu_start(SNAP_JOB, 3, 1)
    patch = engine.patch(first, engine.publish())
    assert "worker:1" in patch["regions"] and "worker:0" not in patch["regions"]
    assert "worker-grid" not in patch["regions"] and "workers" not in patch["regions"]


BODY = '<div class="engine-body" data-seq="1">{}</div>'


@pytest.mark.parametrize("inner, why", [
    ('<div data-region="a"></div><div data-region="a"></div>', "a name used twice"),
    ('<div data-region="a"></div>loose text', "text beside the body's regions"),
    ('<div data-region="a"><ul data-region="l" data-region-list><li>x</li></ul></div>', "a list child that is no region"),
    ('<div data-region="a"><span></div>', "unbalanced tags"),
    ('<div></div>', "a body child that is no region"),
])
def test_a_section_that_is_not_what_the_templates_make_is_not_split(inner, why):
    assert patches.split_sections(BODY.format(inner)) is None, why


def test_ticking_values_are_masked_and_nothing_else():
    html = ('<span class="live" data-live-secs="4.7" title="busy 4.7 s">4.7 s</span>'
            '<span class="cell" data-state="gpu" title="gpu 3 s">5</span>')
    masked = patches.mask_ticking(html)
    assert masked == ('<span class="live" data-live-secs="" title=""></span>'
                      '<span class="cell" data-state="gpu" title="gpu 3 s">5</span>')


def test_each_engines_previous_frame_stays_held_in_a_large_fleet():
    # Sixty engines polled in turn: one shared window of 64 frames kept only the newest of each.
    engines = [Engine(busy_tracker(), f"box-{i:02d}") for i in range(60)]
    firsts = [e.publish() for e in engines]
    for engine, first in zip(engines, firsts):
        engine.tracker.set_queue_depth(3)
        assert patches.patch_frame(engine.engine_id, first, engine.publish(), True) is not None
