"""Scale-out: with no loop attached the publisher thread keeps one private loop for the Redis layer."""
from __future__ import annotations

import asyncio

import pytest

from gpu_engine.publisher import SnapshotPublisher
from gpu_engine.wire import message_snapshot
from tests.panel.helpers import SNAP_JOB, busy_tracker, clear_panel_cache
from tests.services import redis_down, redis_status_group

REDIS_DOWN = redis_down()
pytestmark = pytest.mark.skipif(REDIS_DOWN is not None, reason=str(REDIS_DOWN))


@pytest.mark.asyncio
async def test_thread_without_loop_publishes_through_redis_pubsub():
    async with redis_status_group() as (sender, receive):
        tracker = busy_tracker()
        pub = SnapshotPublisher(tracker, "redis-engine", max_rate=20, heartbeat_secs=5, channel_layer=sender)
        pub.start()
        try:
            first = await receive(5)
            assert first["engine_id"] == "redis-engine"
            assert message_snapshot(first)["pipelines"][0]["job_id"] == SNAP_JOB
            await asyncio.to_thread(tracker.set_queue_depth, 7)
            second = await receive(5)
            assert second["seq"] > first["seq"]
            assert message_snapshot(second)["counters"]["queue_depth"] == 7
            assert pub.send_errors == 0
        finally:
            await asyncio.to_thread(pub.stop)
            clear_panel_cache()
