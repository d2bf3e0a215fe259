"""/ws/status/ sends the latest snapshot of every engine on connect, then updates in seq order."""
from __future__ import annotations

import asyncio
import json

import pytest
from channels.layers import get_channel_layer

from gpu_engine import wire
from statuspanel.render import engine as rendering
from tests.panel.helpers import SNAP_JOB, busy_tracker, loop_publisher, next_frame, open_status

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("api_token", "clean_panel_cache", "fresh_render_caches")]


async def test_latest_snapshot_of_every_engine_on_connect():
    for engine_id in ("eng-2", "eng-1"):
        await asyncio.to_thread(loop_publisher(busy_tracker(), engine_id).publish_now)
    comm = await open_status()
    frames = [await next_frame(comm), await next_frame(comm)]
    assert [f["engine_id"] for f in frames] == ["eng-1", "eng-2"]
    for f in frames:
        assert f["type"] == "snapshot" and f["seq"] == f["snapshot"]["seq"]
        assert f'title="{SNAP_JOB}"' in f["html"]
    assert await comm.receive_nothing(timeout=0.1)
    await comm.disconnect()


async def test_updates_arrive_in_seq_order_and_stale_ones_are_dropped():
    tracker = busy_tracker()
    pub = loop_publisher(tracker, "eng-seq")
    comm = await open_status()
    frames = []
    for depth in (1, 2, 3):  # one at a time: a snapshot overtaken before its render starts is skipped
        tracker.set_queue_depth(depth)
        await asyncio.to_thread(pub.publish_now)
        frames.append(await next_frame(comm))
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
    await asyncio.to_thread(loop_publisher(busy_tracker(), "eng-json").publish_now)
    comm = await open_status("&format=json")
    frame = await next_frame(comm)
    assert "html" not in frame and frame["snapshot"]["engine_id"] == "eng-json"
    await comm.disconnect()


async def test_partial_is_rendered_once_per_snapshot_not_per_client():
    pub = loop_publisher(busy_tracker(), "eng-cache")
    clients = [await open_status() for _ in range(3)]
    await asyncio.to_thread(pub.publish_now)
    frames = [await next_frame(c) for c in clients]
    assert len({f["html"] for f in frames}) == 1
    assert rendering.html_cache.misses == 1
    for c in clients:
        await c.disconnect()


async def test_resync_resends_latest():
    await asyncio.to_thread(loop_publisher(busy_tracker(), "eng-resync").publish_now)
    comm = await open_status()
    first = await next_frame(comm)
    await comm.send_json_to({"type": "resync"})
    again = await next_frame(comm)
    assert again["seq"] == first["seq"]
    await comm.disconnect()
