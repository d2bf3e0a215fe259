"""Liveness in the Redis cache: a heartbeat under half a second still leaves a live snapshot.

Django's Redis backend truncates a timeout to whole seconds and deletes a key set with 0, so a
TTL of two 0.2 s heartbeats (0.4 s) used to erase the snapshot at once: the engine looked gone.
"""
from __future__ import annotations

import secrets
import time

import pytest

from gpu_engine.publisher import SnapshotPublisher
from gpu_engine.tracker import StatusTracker
from gpu_engine.wire import latest_snapshots, snapshot_ttl
from tests.services import REDIS_URL, private_redis_prefix, services_up


class NullLayer:
    async def group_send(self, group: str, message: dict) -> None:
        return None


def test_ttl_is_rounded_up_to_whole_seconds_only_where_the_backend_truncates():
    from django.core.cache.backends.locmem import LocMemCache
    from django.core.cache.backends.redis import RedisCache

    redis_cache, local = RedisCache(REDIS_URL, {}), LocMemCache("ttl-test", {})
    beats = (0.1, 0.2, 0.5, 0.75, 1.0, 2.0)
    assert [snapshot_ttl(redis_cache, h) for h in beats] == [1, 1, 1, 2, 2, 4]
    assert [snapshot_ttl(local, h) for h in beats] == [0.2, 0.4, 1.0, 1.5, 2.0, 4.0]


def test_short_heartbeat_snapshot_is_live_in_redis_then_expires():
    reason = services_up()
    if reason:
        pytest.skip(reason)
    from django.core.cache.backends.redis import RedisCache

    with private_redis_prefix() as prefix:
        cache = RedisCache(REDIS_URL, {"KEY_PREFIX": prefix})
        engine_id = f"ttl-{secrets.token_hex(3)}"
        pub = SnapshotPublisher(StatusTracker(), engine_id, heartbeat_secs=0.2, channel_layer=NullLayer(), cache=cache)
        sent = pub.publish_now()
        live, gone = latest_snapshots(cache)
        assert [s["seq"] for s in live] == [sent["seq"]] and gone == {}
        deadline = time.monotonic() + 10
        while latest_snapshots(cache)[0]:
            assert time.monotonic() < deadline, "the snapshot never expired"
            time.sleep(0.1)
        assert list(latest_snapshots(cache)[1]) == [engine_id]
        cache.close()
