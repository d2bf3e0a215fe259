"""A served panel fed through Redis: `servepanel` (one or several processes) on a private Redis key
prefix, and a real SnapshotPublisher in the test process publishing to the same channel layer, the
way a `runprover --no-serve` engine of a scale-out deployment does."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tests.credentials import TOKEN
from tests.panel.helpers import busy_tracker
from tests.process_support import ServedSite
from tests.services import REDIS_URL, private_redis_prefix


@contextmanager
def fed_panel(tmp_path, *args: str, **env: str) -> Iterator[ServedSite]:
    """`servepanel *args` on Redis, while an engine publishes a changing snapshot ~20 times a second."""
    from channels_redis.pubsub import RedisPubSubChannelLayer

    from gpu_engine.publisher import SnapshotPublisher

    with private_redis_prefix() as prefix:
        site = ServedSite(tmp_path, TOKEN, REDIS_PREFIX=prefix, **env)
        site.env["REDIS_URL"] = REDIS_URL  # ServedSite leaves the caller's Redis out; this site is on it
        site.start("servepanel", *args)
        layer = RedisPubSubChannelLayer(hosts=[{"address": REDIS_URL, "max_connections": 4}], prefix=f"{prefix}:asgi")
        tracker = busy_tracker()
        publisher = SnapshotPublisher(tracker, "redis-fed-engine", max_rate=20, heartbeat_secs=5, channel_layer=layer)
        stop = threading.Event()

        def churn() -> None:
            depth = 0
            while not stop.wait(0.05):
                depth += 1
                tracker.set_queue_depth(depth)

        changer = threading.Thread(target=churn, daemon=True)
        publisher.start()
        changer.start()
        try:
            yield site
        finally:
            stop.set()
            changer.join()
            publisher.stop()
            site.stop()
