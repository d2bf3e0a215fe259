"""`?patch=1`: after an engine's full frame, patch frames of what changed (JSON: replaced top-level
keys; HTML: changed regions), only to a client that holds their base; the others get full frames."""
from __future__ import annotations

import asyncio
import json

import pytest

from gpu_engine import wire
from gpu_engine.publisher import SnapshotPublisher
from gpu_engine.tracker import StatusTracker
from statuspanel.stream import patches
from tests.credentials import TOKEN
from tests.panel.helpers import ORIGIN, busy_tracker, communicator, loop_publisher, next_frame, open_status

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("api_token", "clean_panel_cache", "fresh_render_caches")]


@pytest.fixture(autouse=True)
def fresh_patches():
    patches.clear()


def quiet_tracker() -> StatusTracker:
    """Two idle workers and a finished job: nothing open, so nothing shown changes by itself."""
    t = StatusTracker(synth_max=2, backend="cpu")
    t.register_workers([(0, 0), (1, 0)])
    t.register_job("ps-snap-1-1-1", "snap-update", 1)
    t.partition_synth_start("ps-snap-1-1-1", 0)
    t.partition_synth_end("ps-snap-1-1-1", 0)
    t.partition_gpu_start("ps-snap-1-1-1", 0, 0)
    t.partition_finalize_start("ps-snap-1-1-1", 0, 0)
    t.partition_gpu_end("ps-snap-1-1-1", 0, 0)
    t.job_completed("ps-snap-1-1-1", True)
    return t


def _publisher(tracker: StatusTracker, engine_id: str) -> SnapshotPublisher:
    return loop_publisher(tracker, engine_id, heartbeat_secs=60)  # no heartbeat frame in between


def _changes(tracker, job: str):
    """A run of changes: queue depth, a new job through its phases, a failure, a completion."""
    yield lambda: tracker.set_queue_depth(7)
    yield lambda: tracker.register_job(job, "snap-update", 2)
    yield lambda: tracker.partition_synth_start(job, 0)
    yield lambda: tracker.partition_synth_end(job, 0)
    yield lambda: tracker.partition_gpu_start(job, 0, 1)
    yield lambda: tracker.partition_failed(job, 1, "out of memory")
    yield lambda: tracker.partition_finalize_start(job, 0, 1)
    yield lambda: tracker.partition_gpu_end(job, 0, 1)
    yield lambda: tracker.job_completed(job, False)


async def test_json_client_asking_for_patches_rebuilds_the_latest_snapshot():
    tracker = busy_tracker()
    pub = _publisher(tracker, "eng-jp")
    await asyncio.to_thread(pub.publish_now)
    comm = await open_status("&format=json&patch=1")
    first = await next_frame(comm)
    assert first["type"] == "snapshot"
    rebuilt, held, kinds = dict(first["snapshot"]), first["seq"], []
    for change in _changes(tracker, "ps-snap-9-9-9"):
        change()
        await asyncio.to_thread(pub.publish_now)
        frame = await next_frame(comm)
        kinds.append(frame["type"])
        assert frame["type"] == "patch" and frame["base"] == held, frame
        assert set(frame) == {"type", "engine_id", "seq", "base", "set", "unset"}
        rebuilt.update(frame["set"])
        for key in frame["unset"]:
            del rebuilt[key]
        held = frame["seq"]
        assert len(json.dumps(frame)) < len(json.dumps(rebuilt))  # replaced keys, not the snapshot again
    latest, _gone = await asyncio.to_thread(wire.latest_snapshots)
    assert rebuilt == latest[0] and held == latest[0]["seq"]
    whole = await open_status("&format=json")  # the full frame a fresh client gets: the same snapshot
    assert (await next_frame(whole))["snapshot"] == rebuilt
    await comm.disconnect()
    await whole.disconnect()


async def test_json_client_not_asking_for_patches_gets_whole_snapshots():
    tracker = busy_tracker()
    pub = _publisher(tracker, "eng-jw")
    comm = await open_status("&format=json")
    for depth in (1, 2, 3):
        tracker.set_queue_depth(depth)
        await asyncio.to_thread(pub.publish_now)
        frame = await next_frame(comm)
        assert frame["type"] == "snapshot" and frame["snapshot"]["counters"]["queue_depth"] == depth
    await comm.disconnect()


async def test_html_patch_carries_only_the_regions_that_changed():
    tracker = quiet_tracker()
    pub = _publisher(tracker, "eng-hp")
    comm = await open_status("&patch=1")
    await asyncio.to_thread(pub.publish_now)
    full = await next_frame(comm)
    assert full["type"] == "snapshot"
    tracker.set_queue_depth(9)
    await asyncio.to_thread(pub.publish_now)
    patch = await next_frame(comm)
    assert patch["type"] == "patch" and patch["base"] == full["seq"] and patch["seq"] == full["seq"] + 1
    # The queue depth is shown in the jobs card alone: that card is the whole patch.
    assert set(patch["regions"]) == {"summary-jobs"} and "lists" not in patch
    for name, html in patch["regions"].items():
        assert f'data-region="{name}"' in html and html not in full["html"]
    assert patch["attrs"]["data-seq"] == str(patch["seq"])
    assert patch["counters"]["queue_depth"] == 9
    await comm.disconnect()


async def test_client_whose_base_differs_gets_the_full_frame_and_resyncs_one_engine():
    tracker = busy_tracker()
    pub = _publisher(tracker, "eng-gap")
    comm = await open_status("&patch=1")
    await asyncio.to_thread(pub.publish_now)
    first = await next_frame(comm)
    patches.held.clear()  # what the client holds is no longer held here: no patch can start from it
    tracker.set_queue_depth(4)
    await asyncio.to_thread(pub.publish_now)
    assert (await next_frame(comm))["type"] == "snapshot"
    await comm.send_to(text_data=json.dumps({"type": "resync", "engine_id": "eng-gap"}))
    again = await next_frame(comm)
    assert again["type"] == "snapshot" and again["seq"] == first["seq"] + 1
    await comm.send_to(text_data=json.dumps({"type": "resync", "engine_id": 5}))
    assert (await next_frame(comm))["type"] == "error"
    await comm.disconnect()


async def test_patch_parameter_other_than_0_or_1_is_refused():
    comm = communicator(f"/ws/status/?token={TOKEN}&patch=yes", [ORIGIN])
    connected, code = await comm.connect()
    assert not connected and code == 4403

