"""Scale-out: with no server loop attached the collector sends on its own loop, through the Redis
pub/sub channel layer, to a panel process elsewhere."""
from __future__ import annotations

import asyncio
import socket
import uuid

import pytest

from gpu_engine.wire import STATUS_GROUP, message_snapshot
from statuspanel.fleet.collector import FleetCollector
from statuspanel.fleet.transport import SourceConfig
from tests.fleet.cuzk_server import CuzkServer

REDIS = ("127.0.0.1", 6379)


def _redis_up() -> bool:
    try:
        socket.create_connection(REDIS, timeout=0.5).close()
        return True
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not _redis_up(), reason="no Redis at 127.0.0.1:6379")


@pytest.mark.asyncio
async def test_sources_reach_a_panel_through_redis(clean_panel_cache) -> None:
    from channels_redis.pubsub import RedisPubSubChannelLayer

    prefix = f"vm-fleet-test-{uuid.uuid4().hex[:8]}"
    host = {"address": f"redis://{REDIS[0]}:{REDIS[1]}", "max_connections": 4}
    receiver = RedisPubSubChannelLayer(hosts=[host], prefix=prefix)
    sender = RedisPubSubChannelLayer(hosts=[host], prefix=prefix)
    channel = await receiver.new_channel()
    await receiver.group_add(STATUS_GROUP, channel)
    server = CuzkServer("race", freeze_step=1).start()
    cfg = SourceConfig(id=1, name="redis-box", kind="cuzk", transport="http", url=server.url, interval_secs=0.3)
    collector = FleetCollector(load_sources=lambda: [cfg], record_state_change=lambda *a: None,
                               channel_layer=sender, reload_secs=0.2)
    await asyncio.to_thread(collector.start)
    try:
        seqs = []
        while len(seqs) < 3:
            message = await asyncio.wait_for(receiver.receive(channel), 10)
            snap = message_snapshot(message)
            if message["engine_id"] == "redis-box" and snap["source"]["state"] == "online":
                seqs.append(message["seq"])
                assert [c["problem"] for c in snap["consistency"]] == ["no-worker", "no-worker"]
        assert seqs == sorted(seqs) and len(set(seqs)) == 3
        assert collector.send_errors == 0
    finally:
        await asyncio.to_thread(collector.stop)
        server.stop()
        await receiver.group_discard(STATUS_GROUP, channel)
        await receiver.flush()
