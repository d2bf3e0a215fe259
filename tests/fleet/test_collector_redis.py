"""Scale-out: with no server loop attached the collector sends on its own loop, through the Redis
pub/sub channel layer, to a panel process elsewhere."""
from __future__ import annotations

import asyncio

import pytest

from gpu_engine.wire import message_snapshot
from statuspanel.fleet.collector import FleetCollector
from statuspanel.fleet.transport import SourceConfig
from tests.fleet.cuzk_server import CuzkServer
from tests.services import redis_down, redis_status_group

REDIS_DOWN = redis_down()
pytestmark = pytest.mark.skipif(REDIS_DOWN is not None, reason=str(REDIS_DOWN))


@pytest.mark.asyncio
async def test_sources_reach_a_panel_through_redis(clean_panel_cache) -> None:
    async with redis_status_group() as (sender, receive):
        server = CuzkServer("race", freeze_step=1).start()
        cfg = SourceConfig(id=1, name="redis-box", kind="cuzk", transport="http", url=server.url, interval_secs=0.3)
        collector = FleetCollector(load_sources=lambda: [cfg], record_state_change=lambda *a: None,
                                   channel_layer=sender, reload_secs=0.2)
        await asyncio.to_thread(collector.start)
        try:
            seqs = []
            while len(seqs) < 3:
                message = await receive(10)
                snap = message_snapshot(message)
                if message["engine_id"] == "redis-box" and snap["source"]["state"] == "online":
                    seqs.append(message["seq"])
                    assert [c["problem"] for c in snap["consistency"]] == ["no-worker", "no-worker"]
            assert seqs == sorted(seqs) and len(set(seqs)) == 3
            assert collector.send_errors == 0
        finally:
            await asyncio.to_thread(collector.stop)
            server.stop()
