"""The publisher delivers from a plain thread to the in-memory layer through an attached loop."""
from __future__ import annotations

import asyncio

import pytest
from channels.layers import InMemoryChannelLayer
from django.core.cache import cache

from gpu_engine import wire
from gpu_engine.publisher import SnapshotPublisher
from gpu_engine.wire import STATUS_GROUP, message_snapshot
from tests.panel.helpers import SNAP_JOB, busy_tracker

pytestmark = pytest.mark.usefixtures("clean_panel_cache")


async def _receive(layer, channel, timeout=3.0):
    return await asyncio.wait_for(layer.receive(channel), timeout)


@pytest.mark.asyncio
async def test_thread_delivers_through_attached_loop():
    layer = InMemoryChannelLayer()
    channel = await layer.new_channel()
    await layer.group_add(STATUS_GROUP, channel)
    tracker = busy_tracker()
    pub = SnapshotPublisher(tracker, "engine-a", max_rate=50, heartbeat_secs=5, channel_layer=layer)
    pub.attach_loop(asyncio.get_running_loop())
    pub.start()
    try:
        first = await _receive(layer, channel)
        assert first["type"] == wire.MESSAGE_TYPE
        assert first["engine_id"] == "engine-a"
        snap = message_snapshot(first)
        assert snap["engine_id"] == "engine-a" and snap["seq"] == first["seq"]
        assert snap["pipelines"][0]["job_id"] == SNAP_JOB
        await asyncio.to_thread(tracker.partition_synth_end, SNAP_JOB, 3)  # a change from another thread
        second = await _receive(layer, channel)
        assert second["seq"] > first["seq"]
        states = [p["state"] for p in message_snapshot(second)["pipelines"][0]["partitions"]]
        assert states[3] == "synth_done"
    finally:
        await asyncio.to_thread(pub.stop)


@pytest.mark.asyncio
async def test_cache_holds_latest_snapshot_and_engine_registry():
    layer = InMemoryChannelLayer()
    pub = SnapshotPublisher(busy_tracker(), "engine-b", heartbeat_secs=3, channel_layer=layer)
    pub.attach_loop(asyncio.get_running_loop())
    snap = await asyncio.to_thread(pub.publish_now)
    stored = cache.get(wire.snapshot_key("engine-b"))
    assert stored["seq"] == snap["seq"] and stored["heartbeat_secs"] == 3
    assert "engine-b" in wire.known_engines()
    live, gone = wire.latest_snapshots()
    assert [s["engine_id"] for s in live] == ["engine-b"] and gone == {}


@pytest.mark.asyncio
async def test_send_on_closed_loop_is_reported_not_fatal():
    loop = asyncio.new_event_loop()
    loop.close()
    pub = SnapshotPublisher(busy_tracker(), "engine-c", heartbeat_secs=3, channel_layer=InMemoryChannelLayer())
    pub.attach_loop(loop)
    with pytest.raises(RuntimeError, match="closed"):
        await asyncio.to_thread(pub.publish_now)
    pub.publish_safely()  # the thread's wrapper logs and counts instead of dying
    assert pub.send_errors == 1
