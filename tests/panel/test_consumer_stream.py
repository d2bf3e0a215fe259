"""/ws/status/ sends the latest snapshot of every engine on connect, then updates in seq order."""
from __future__ import annotations

import asyncio
import json

import pytest
from channels.layers import get_channel_layer

from gpu_engine import wire
from gpu_engine.publisher import SnapshotPublisher
from statuspanel.render import engine as rendering
from tests.credentials import TOKEN
from tests.panel.helpers import ORIGIN, SNAP_JOB, busy_tracker, communicator

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("api_token", "clean_panel_cache", "fresh_render_caches")]


async def _open(query: str = ""):
    comm = communicator(f"/ws/status/?token={TOKEN}{query}", [ORIGIN])
    connected, _ = await comm.connect()
    assert connected
    return comm


def _publisher(tracker, engine_id: str) -> SnapshotPublisher:
    pub = SnapshotPublisher(tracker, engine_id, heartbeat_secs=5)
    pub.attach_loop(asyncio.get_running_loop())
    return pub


async def _frame(comm) -> dict:
    return json.loads(await comm.receive_from(timeout=3))


async def test_latest_snapshot_of_every_engine_on_connect():
    for engine_id in ("eng-2", "eng-1"):
        await asyncio.to_thread(_publisher(busy_tracker(), engine_id).publish_now)
    comm = await _open()
    frames = [await _frame(comm), await _frame(comm)]
    assert [f["engine_id"] for f in frames] == ["eng-1", "eng-2"]
    for f in frames:
        assert f["type"] == "snapshot" and f["seq"] == f["snapshot"]["seq"]
        assert f'title="{SNAP_JOB}"' in f["html"]
    assert await comm.receive_nothing(timeout=0.1)
    await comm.disconnect()


async def test_updates_arrive_in_seq_order_and_stale_ones_are_dropped():
    tracker = busy_tracker()
    pub = _publisher(tracker, "eng-seq")
    comm = await _open()
    for depth in (1, 2, 3):
        tracker.set_queue_depth(depth)
        await asyncio.to_thread(pub.publish_now)
    frames = [await _frame(comm) for _ in range(3)]
    assert [f["snapshot"]["counters"]["queue_depth"] for f in frames] == [1, 2, 3]
    assert [f["seq"] for f in frames] == sorted(f["seq"] for f in frames)
    stale = dict(frames[0]["snapshot"])
    layer = get_channel_layer()
    for body in ({"snapshot_json": json.dumps(stale)}, {"snapshot": stale}):  # both message forms
        await layer.group_send(wire.STATUS_GROUP, {
            "type": wire.MESSAGE_TYPE, "engine_id": "eng-seq", "seq": stale["seq"], **body})
    assert await comm.receive_nothing(timeout=0.2)
    await comm.disconnect()


async def test_json_format_leaves_out_html():
    await asyncio.to_thread(_publisher(busy_tracker(), "eng-json").publish_now)
    comm = await _open("&format=json")
    frame = await _frame(comm)
    assert "html" not in frame and frame["snapshot"]["engine_id"] == "eng-json"
    await comm.disconnect()


async def test_partial_is_rendered_once_per_snapshot_not_per_client():
    pub = _publisher(busy_tracker(), "eng-cache")
    clients = [await _open() for _ in range(3)]
    await asyncio.to_thread(pub.publish_now)
    frames = [await _frame(c) for c in clients]
    assert len({f["html"] for f in frames}) == 1
    assert rendering.html_cache.misses == 1
    for c in clients:
        await c.disconnect()


async def test_resync_resends_latest():
    await asyncio.to_thread(_publisher(busy_tracker(), "eng-resync").publish_now)
    comm = await _open()
    first = await _frame(comm)
    await comm.send_json_to({"type": "resync"})
    again = await _frame(comm)
    assert again["seq"] == first["seq"]
    await comm.disconnect()
