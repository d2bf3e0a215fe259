"""Generated frames against `/ws/status/`: an error frame or the documented close, never a crash.

Every example opens a connection, sends one made-up frame (text or binary; JSON or not; wrong
types, unicode, deep nesting, sizes on both sides of the limit), checks the answer the module
docstring of statuspanel.stream.consumer promises, then checks the same connection still answers a ping.
"""
from __future__ import annotations

import asyncio
import json

import pytest
from channels.testing import WebsocketCommunicator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statuspanel.stream.consumer import CLOSE_MESSAGE_TOO_BIG, CLOSE_POLICY_VIOLATION, MAX_CLIENT_MESSAGE
from tests.credentials import TOKEN
from tests.panel.helpers import ORIGIN, communicator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("api_token", "clean_panel_cache")]
FUZZ = settings(max_examples=100, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FEW = settings(FUZZ, max_examples=20)

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
typed_messages = st.fixed_dictionaries(
    {"type": st.sampled_from(["ping", "resync", "PING", "pong", "", "snapshot"]) | json_values},
    optional={"seq": json_values, "engine_id": json_values},
)
text_frames = (
    st.text(max_size=200)
    | json_values.map(json.dumps)
    | typed_messages.map(json.dumps)
    | st.integers(1, MAX_CLIENT_MESSAGE // 2 - 1).map(lambda n: "[" * n + "]" * n)
    | st.integers(1, MAX_CLIENT_MESSAGE // 6).map(lambda n: '{"a":' * n + "0" + "}" * n)
    | st.integers(4301, MAX_CLIENT_MESSAGE).map(lambda n: "9" * n)
    | st.integers(MAX_CLIENT_MESSAGE - 8, MAX_CLIENT_MESSAGE + 8).map(lambda n: "é" * (n // 2) + "x" * (n % 2))
)
binary_frames = st.binary(max_size=200) | st.integers(MAX_CLIENT_MESSAGE - 4, MAX_CLIENT_MESSAGE + 4).map(
    lambda n: b"\x00" * n) | typed_messages.map(lambda m: json.dumps(m).encode())


async def _open(query: str = f"token={TOKEN}") -> WebsocketCommunicator:
    comm = communicator(f"/ws/status/?{query}", [ORIGIN])
    connected, _ = await comm.connect()
    assert connected and await comm.receive_nothing(timeout=0.02)
    return comm


async def _send(comm: WebsocketCommunicator, text: str | None, data: bytes | None) -> None:
    # send_to refuses empty frames; a real client may send them.
    await comm.send_input({"type": "websocket.receive", "text": text} if text is not None
                          else {"type": "websocket.receive", "bytes": data})


async def _assert_pong(comm: WebsocketCommunicator) -> None:
    await comm.send_json_to({"type": "ping"})
    assert json.loads(await comm.receive_from(timeout=2)) == {"type": "pong"}


def _expected_kind(text: str) -> str | None:
    try:
        msg = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        return None
    if msg["type"] == "resync" and msg.get("engine_id") is not None and not isinstance(msg["engine_id"], str):
        return None  # a resync of one engine names it by its id (a string): anything else is an error
    return msg["type"]


async def _exchange(text: str | None, data: bytes | None) -> None:
    comm = await _open()
    try:
        size = len(text.encode()) if text is not None else len(data)
        await _send(comm, text, data)
        if size > MAX_CLIENT_MESSAGE:
            out = await comm.receive_output(timeout=2)
            assert out == {"type": "websocket.close", "code": CLOSE_MESSAGE_TOO_BIG,
                           "reason": f"message over {MAX_CLIENT_MESSAGE} bytes"}
            await _assert_pong(await _open())  # the server keeps serving new connections
            return
        kind = _expected_kind(text) if text is not None else None
        if kind == "ping":
            assert json.loads(await comm.receive_from(timeout=2)) == {"type": "pong"}
        elif kind == "resync":
            assert await comm.receive_nothing(timeout=0.02)  # no engine has published: nothing to resend
        else:
            frame = json.loads(await comm.receive_from(timeout=2))
            assert frame["type"] == "error" and isinstance(frame["error"], str) and frame["error"]
            assert len(frame["error"]) < 1000  # a message, not an echo of the payload
        await _assert_pong(comm)
    finally:
        await comm.disconnect()


@FUZZ
@given(text=text_frames)
def test_random_text_frames(text):
    asyncio.run(_exchange(text, None))


@FUZZ
@given(data=binary_frames)
def test_random_binary_frames(data):
    asyncio.run(_exchange(None, data))


@FEW
@given(frames=st.lists(st.one_of(text_frames.filter(lambda t: len(t.encode()) <= MAX_CLIENT_MESSAGE)
                                 .map(lambda t: (t, None)),
                                 st.binary(max_size=100).map(lambda b: (None, b))), min_size=2, max_size=8))
def test_a_stream_of_garbage_on_one_connection(frames):
    async def run() -> None:
        comm = await _open()
        for text, data in frames:
            await _send(comm, text, data)
            kind = _expected_kind(text) if text is not None else None
            if kind == "resync":
                continue
            frame = json.loads(await comm.receive_from(timeout=2))
            assert frame["type"] == ("pong" if kind == "ping" else "error")
        await _assert_pong(comm)
        await comm.disconnect()

    asyncio.run(run())


@FUZZ
@given(token=st.text(max_size=40), fmt=st.text(max_size=10) | st.sampled_from(["html", "json"]),
       extra=st.binary(max_size=30))
def test_garbage_connect_queries_close_with_policy_code(token, fmt, extra):
    from urllib.parse import quote, urlencode

    query = urlencode({"token": token, "format": fmt}) + "&" + quote(extra, safe="=&")

    async def run() -> None:
        comm = communicator(f"/ws/status/?{query}", [ORIGIN])
        connected, code = await comm.connect()
        if token == TOKEN and fmt in ("html", "json"):
            assert connected
            await _assert_pong(comm)
        else:
            assert not connected and code == CLOSE_POLICY_VIOLATION
        await comm.disconnect()

    asyncio.run(run())
