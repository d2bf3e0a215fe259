"""Coalescing (latest wins, at most max_rate a second), heartbeat republish, liveness TTL, seq."""
from __future__ import annotations

import threading
import time

import pytest
from django.core.cache import cache

from gpu_engine import wire
from gpu_engine.publisher import SnapshotPublisher
from gpu_engine.tracker import StatusTracker
from gpu_engine.wire import message_snapshot

pytestmark = pytest.mark.usefixtures("clean_panel_cache")


class Recorder:
    """A channel layer that records what it is sent (delivery itself is tested elsewhere)."""

    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.lock = threading.Lock()

    async def group_send(self, group: str, message: dict) -> None:
        with self.lock:
            self.messages.append(message)


def test_burst_is_coalesced_and_latest_wins():
    tracker = StatusTracker()
    layer = Recorder()
    pub = SnapshotPublisher(tracker, "rate-a", max_rate=5, heartbeat_secs=30, channel_layer=layer)
    pub.start()
    try:
        time.sleep(0.05)
        t0 = time.monotonic()
        for n in range(200):
            tracker.set_queue_depth(n + 1)
            time.sleep(0.002)
        burst = time.monotonic() - t0
        time.sleep(0.45)  # one more coalescing interval for the tail of the burst
    finally:
        pub.stop()
    msgs = layer.messages
    # 1 initial + at most max_rate per second of burst (+1 for the tail)
    assert len(msgs) <= 2 + int(burst * 5) + 1, (len(msgs), burst)
    assert len(msgs) >= 2
    assert message_snapshot(msgs[-1])["counters"]["queue_depth"] == 200
    seqs = [m["seq"] for m in msgs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_heartbeat_republishes_without_changes():
    pub = SnapshotPublisher(StatusTracker(), "rate-b", heartbeat_secs=0.1, channel_layer=Recorder())
    pub.start()
    time.sleep(0.45)
    pub.stop()
    assert pub.published >= 3
    assert cache.get(wire.snapshot_key("rate-b")) is not None


def test_snapshot_expires_after_two_heartbeats():
    pub = SnapshotPublisher(StatusTracker(), "rate-c", heartbeat_secs=0.1, channel_layer=Recorder())
    pub.publish_now()
    assert [s["engine_id"] for s in wire.latest_snapshots()[0]] == ["rate-c"]
    time.sleep(0.3)
    live, gone = wire.latest_snapshots()
    assert live == [] and "rate-c" in gone


def test_restarted_engine_seq_stays_above_previous_run():
    first = SnapshotPublisher(StatusTracker(), "rate-d", heartbeat_secs=1, channel_layer=Recorder())
    for _ in range(5):
        first.publish_now()
    second = SnapshotPublisher(StatusTracker(), "rate-d", heartbeat_secs=1, channel_layer=Recorder())
    assert second.publish_now()["seq"] > first.seq


@pytest.mark.parametrize("kwargs", [{"max_rate": 0}, {"heartbeat_secs": -1}])
def test_bad_settings_are_rejected(kwargs):
    with pytest.raises(ValueError):
        SnapshotPublisher(StatusTracker(), "rate-e", channel_layer=Recorder(), **kwargs)


@pytest.mark.parametrize("engine_id", ["", "has space", "x" * 129, "tab\tid"])
def test_bad_engine_ids_are_rejected(engine_id):
    with pytest.raises(ValueError, match="engine_id"):
        SnapshotPublisher(StatusTracker(), engine_id, channel_layer=Recorder())
