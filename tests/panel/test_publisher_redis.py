"""Scale-out: with no loop attached the publisher thread keeps one private loop for the Redis layer."""
from __future__ import annotations

import asyncio
import socket
import uuid

import pytest

from gpu_engine.publisher import SnapshotPublisher
from gpu_engine.wire import STATUS_GROUP, message_snapshot
from tests.panel.helpers import SNAP_JOB, busy_tracker, clear_panel_cache

REDIS = ("127.0.0.1", 6379)


def _redis_up() -> bool:
    try:
        socket.create_connection(REDIS, timeout=0.5).close()
        return True
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not _redis_up(), reason="no Redis at 127.0.0.1:6379")


@pytest.mark.asyncio
async def test_thread_without_loop_publishes_through_redis_pubsub():
    from channels_redis.pubsub import RedisPubSubChannelLayer

    prefix = f"vm-test-{uuid.uuid4().hex[:8]}"
    host = {"address": f"redis://{REDIS[0]}:{REDIS[1]}", "max_connections": 4}
    receiver = RedisPubSubChannelLayer(hosts=[host], prefix=prefix)
    sender = RedisPubSubChannelLayer(hosts=[host], prefix=prefix)
    channel = await receiver.new_channel()
    await receiver.group_add(STATUS_GROUP, channel)
    tracker = busy_tracker()
    pub = SnapshotPublisher(tracker, "redis-engine", max_rate=20, heartbeat_secs=5, channel_layer=sender)
    pub.start()
    try:
        first = await asyncio.wait_for(receiver.receive(channel), 5)
        assert first["engine_id"] == "redis-engine"
        assert message_snapshot(first)["pipelines"][0]["job_id"] == SNAP_JOB
        await asyncio.to_thread(tracker.set_queue_depth, 7)
        second = await asyncio.wait_for(receiver.receive(channel), 5)
        assert second["seq"] > first["seq"]
        assert message_snapshot(second)["counters"]["queue_depth"] == 7
        assert pub.send_errors == 0
    finally:
        await asyncio.to_thread(pub.stop)
        await receiver.group_discard(STATUS_GROUP, channel)
        await receiver.flush()
        clear_panel_cache()
