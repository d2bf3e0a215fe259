"""A malformed client message gets an error frame (connection stays); an over-large one closes 4009
with the reason (1009 is a code this server stack cannot send: it became 1011 and a traceback)."""
from __future__ import annotations

import json

import pytest

from statuspanel.stream.consumer import MAX_CLIENT_MESSAGE
from tests.credentials import TOKEN
from tests.panel.helpers import ORIGIN, communicator

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("api_token", "clean_panel_cache")]


async def _open():
    comm = communicator(f"/ws/status/?token={TOKEN}", [ORIGIN])
    connected, _ = await comm.connect()
    assert connected and await comm.receive_nothing(timeout=0.05)
    return comm


@pytest.mark.parametrize("payload", ["not json {", "[1, 2]", '{"type": "explode"}', '"ping"'])
async def test_malformed_message_gets_error_frame_and_connection_stays(payload):
    comm = await _open()
    await comm.send_to(text_data=payload)
    frame = json.loads(await comm.receive_from(timeout=2))
    assert frame["type"] == "error" and frame["error"]
    await comm.send_json_to({"type": "ping"})
    assert json.loads(await comm.receive_from(timeout=2)) == {"type": "pong"}
    await comm.disconnect()


async def test_binary_message_gets_error_frame():
    comm = await _open()
    await comm.send_to(bytes_data=b"\x00\x01")
    assert json.loads(await comm.receive_from(timeout=2))["type"] == "error"
    await comm.disconnect()


async def test_over_large_message_closes_4009_with_reason():
    comm = await _open()
    await comm.send_to(text_data="x" * (MAX_CLIENT_MESSAGE + 1))
    out = await comm.receive_output(timeout=2)
    assert out["type"] == "websocket.close" and out["code"] == 4009
    assert str(MAX_CLIENT_MESSAGE) in out["reason"]
    await comm.disconnect()


async def test_message_at_the_limit_is_not_closed():
    comm = await _open()
    await comm.send_to(text_data="x" * MAX_CLIENT_MESSAGE)
    assert json.loads(await comm.receive_from(timeout=2))["type"] == "error"
    await comm.disconnect()
