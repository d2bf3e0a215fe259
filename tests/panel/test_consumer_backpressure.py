"""A client that falls behind (its send window closed) is sent nothing until it catches up, and then
only the latest snapshot of each engine: never a queue of old ones."""
from __future__ import annotations

import asyncio

import pytest

from statuspanel.stream.consumer import StatusConsumer
from tests.panel.helpers import busy_tracker, loop_publisher, next_frame, open_status
from vastmanager.backpressure import EXTENSION, SendWindow

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("api_token", "clean_panel_cache", "fresh_render_caches")]


async def _open(window: SendWindow):
    # What the guarded server puts in every WebSocket scope (vastmanager.server.GuardedServer).
    return await open_status("&format=json", extensions={EXTENSION: window})


async def test_behind_client_gets_only_the_latest_snapshot_per_engine():
    window = SendWindow()
    comm = await _open(window)
    trackers = {e: busy_tracker() for e in ("eng-a", "eng-b")}
    pubs = {e: loop_publisher(t, e) for e, t in trackers.items()}
    window.pauseProducing()  # the transport's buffer is full: the client is not reading
    for depth in range(1, 6):
        for engine_id, tracker in trackers.items():
            tracker.set_queue_depth(depth * (1 if engine_id == "eng-a" else 10))
            await asyncio.to_thread(pubs[engine_id].publish_now)
    assert await comm.receive_nothing(timeout=0.3), "frames were sent to a client that is behind"
    window.resumeProducing()  # it caught up
    frames = [await next_frame(comm) for _ in range(2)]
    assert await comm.receive_nothing(timeout=0.3), "old snapshots were queued for the slow client"
    depths = {f["engine_id"]: f["snapshot"]["counters"]["queue_depth"] for f in frames}
    assert depths == {"eng-a": 5, "eng-b": 50}
    await comm.disconnect()


async def test_client_that_keeps_up_gets_every_snapshot():
    window = SendWindow()
    comm = await _open(window)
    tracker = busy_tracker()
    pub = loop_publisher(tracker, "eng-live")
    for depth in (1, 2, 3):
        tracker.set_queue_depth(depth)
        await asyncio.to_thread(pub.publish_now)
    frames = [await next_frame(comm) for _ in range(3)]
    assert [f["snapshot"]["counters"]["queue_depth"] for f in frames] == [1, 2, 3]
    await comm.disconnect()


async def test_window_closing_again_mid_flush_keeps_the_rest_for_later(monkeypatch):
    window = SendWindow()
    comm = await _open(window)
    sent: list[str] = []
    original = StatusConsumer.send_text

    async def send_and_fill(self, text):  # as a transport does: the first frame fills its buffer again
        sent.append(text)
        await original(self, text)
        if len(sent) == 1:
            window.pauseProducing()

    monkeypatch.setattr(StatusConsumer, "send_text", send_and_fill)
    window.pauseProducing()
    for engine_id in ("eng-x", "eng-y"):
        await asyncio.to_thread(loop_publisher(busy_tracker(), engine_id).publish_now)
    window.resumeProducing()
    first = await next_frame(comm)
    assert await comm.receive_nothing(timeout=0.3)
    window.resumeProducing()
    second = await next_frame(comm)
    assert {first["engine_id"], second["engine_id"]} == {"eng-x", "eng-y"}
    await comm.disconnect()


async def test_window_reports_how_long_it_has_been_closed():
    now = [100.0]
    window = SendWindow(clock=lambda: now[0])
    assert window.is_open and window.closed_for() == 0
    window.pauseProducing()
    now[0] = 103.5
    assert not window.is_open and window.closed_for() == 3.5
    opened = []
    window.on_open(lambda: opened.append(True))
    window.resumeProducing()
    assert window.is_open and window.closed_for() == 0 and opened == [True]
