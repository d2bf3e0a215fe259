"""/ws/status/?alerts=1: the alerts frame on connect, on resync and whenever the firing set or its
acknowledge/silence state changes (this process's AlertStream, through the one delivery onto the
wire); a client that does not ask gets the stream exactly as before."""
from __future__ import annotations

import asyncio
import json

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async

from statuspanel.alerts.broadcast import AlertStream
from statuspanel.alerts.evaluator import Evaluator
from statuspanel.alerts.panel import acknowledge
from tests.alerts.conftest import Feed, source_snapshot
from tests.credentials import TOKEN
from tests.panel.helpers import ORIGIN, communicator, next_frame, open_status

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("api_token", "clean_panel_cache")]


def _evaluate(feed: Feed, *down: str) -> None:
    from django.core.management import call_command

    call_command("setalertrule", "source-down", "--for", "0")
    feed.snaps = [source_snapshot(n, "unreachable") for n in down]
    evaluator = Evaluator(snapshots=feed)
    assert evaluator.lease.acquire_or_renew()
    evaluator.evaluate_once()
    evaluator.lease.release()


async def _first_frames(stream: AlertStream) -> None:
    """Until the stream holds its first frames: a client connecting before that reads the set itself
    (seq 0) and then gets the stream's first publish of the same set as a newer frame."""
    for _ in range(500):
        if stream.latest is not None:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the alert stream published nothing in 5 s")


@pytest_asyncio.fixture
async def stream():
    """This process's alert stream, sending through the test's loop (as the server's, in serving)."""
    from statuspanel.alerts import broadcast

    s = AlertStream(interval=0.1)
    s.attach_loop(asyncio.get_running_loop())
    broadcast._current = s.start()
    await _first_frames(s)
    yield s
    broadcast._current = None
    await asyncio.to_thread(s.stop)


async def test_without_asking_no_alerts_frame_is_sent() -> None:
    await sync_to_async(_evaluate)(Feed(), "box-1")
    comm = await open_status("")
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_the_set_on_connect_even_when_empty_and_on_resync() -> None:
    comm = await open_status("&alerts=1")
    frame = await next_frame(comm)
    assert frame["type"] == "alerts" and frame["alerts"] == [] and "html" in frame
    await sync_to_async(_evaluate)(Feed(), "box-1")
    await comm.send_to(text_data=json.dumps({"type": "resync"}))
    frame = await next_frame(comm)
    assert [(a["rule"], a["engine"]) for a in frame["alerts"]] == [("source-down", "box-1")]
    await comm.disconnect()


async def test_changes_arrive_live_in_seq_order_json_format_without_html(stream) -> None:
    feed = Feed()
    comm = await open_status("&alerts=1&format=json")
    first = await next_frame(comm)
    assert first["type"] == "alerts" and first["alerts"] == [] and "html" not in first
    await sync_to_async(_evaluate)(feed, "box-1", "box-2")
    fired = await next_frame(comm)
    assert fired["seq"] > first["seq"] and {a["engine"] for a in fired["alerts"]} == {"box-1", "box-2"}
    await sync_to_async(acknowledge)(fired["alerts"][0]["id"], "alice")
    stream.wake()
    acked = await next_frame(comm)
    assert acked["seq"] > fired["seq"] and acked["alerts"][0]["acknowledged_by"] == "alice"
    await sync_to_async(_evaluate)(feed)  # both resolved
    cleared = await next_frame(comm)
    assert cleared["alerts"] == [] and cleared["seq"] > acked["seq"]
    assert await comm.receive_nothing(timeout=0.4)  # nothing changed: nothing sent
    await comm.disconnect()


async def test_a_client_connecting_gets_the_streams_latest_and_no_repeat(stream) -> None:
    await sync_to_async(_evaluate)(Feed(), "box-9")
    await asyncio.sleep(0.4)
    seq = stream.latest[0]
    comm = await open_status("&alerts=1")
    frame = await next_frame(comm)
    assert frame["seq"] == seq and frame["alerts"][0]["engine"] == "box-9" and "box-9" in frame["html"]
    assert await comm.receive_nothing(timeout=0.4)
    await comm.disconnect()


async def test_a_bad_alerts_parameter_is_refused() -> None:
    comm = communicator(f"/ws/status/?token={TOKEN}&alerts=yes", [ORIGIN])
    connected, code = await comm.connect()
    assert not connected and code == 4403


async def test_an_acknowledge_served_here_reaches_clients_at_once_not_at_the_next_poll() -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from statuspanel.alerts import broadcast

    await sync_to_async(_evaluate)(Feed(), "box-1")
    slow = AlertStream(interval=60.0)  # only a wake makes it look again within this test
    slow.attach_loop(asyncio.get_running_loop())
    broadcast._current = slow.start()
    try:
        await _first_frames(slow)
        comm = await open_status("&alerts=1&format=json")
        first = await next_frame(comm)
        assert first["alerts"][0]["acknowledged_by"] is None

        def post() -> int:
            client = Client()
            client.force_login(get_user_model().objects.create_user("carol", password="x" * 20))
            return client.post(f"/api/alerts/{first['alerts'][0]['id']}/acknowledge").status_code

        assert await sync_to_async(post)() == 200
        acked = await next_frame(comm)  # within receive_from's 5 s, far under the 60 s poll
        assert acked["alerts"][0]["acknowledged_by"] == "carol" and acked["seq"] > first["seq"]
        await comm.disconnect()
    finally:
        broadcast._current = None
        await asyncio.to_thread(slow.stop)
