"""permessage-deflate on /ws/status/ through the real server: a client that offers it gets compressed
frames it decodes (without context takeover, so one compression serves every viewer), a client that
does not offer it gets the same frames plain, and WS_COMPRESSION=false turns it off."""
from __future__ import annotations

import asyncio
import json

import pytest
import websockets

from tests.credentials import TOKEN
from tests.panel.redis_feed import fed_panel
from tests.services import services_up

pytestmark = [pytest.mark.slow, pytest.mark.skipif(services_up() is not None, reason="needs PostgreSQL and Redis")]


async def _frames(port: int, compression: str | None, count: int = 3) -> tuple[str, list[dict]]:
    """The negotiated extensions header and the first `count` snapshot frames, decoded."""
    url = f"ws://127.0.0.1:{port}/ws/status/?token={TOKEN}"
    async with websockets.connect(url, origin=f"http://127.0.0.1:{port}", compression=compression,
                                  max_size=None) as ws:
        header = ws.response.headers.get("Sec-WebSocket-Extensions", "")
        frames = []
        while len(frames) < count:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 15))
            if frame.get("type") == "snapshot":
                frames.append(frame)
        return header, frames


def _assert_snapshot_frames(frames: list[dict]) -> None:
    assert [f["engine_id"] for f in frames] == ["redis-fed-engine"] * len(frames)
    seqs = [f["seq"] for f in frames]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
    assert all("engine-body" in f["html"] and f["snapshot"]["engine_id"] == "redis-fed-engine" for f in frames)


@pytest.fixture(scope="module")
def panel(tmp_path_factory):
    with fed_panel(tmp_path_factory.mktemp("ws-deflate")) as site:
        yield site


def test_client_offering_deflate_gets_compressed_frames_it_decodes(panel):
    header, frames = asyncio.run(_frames(panel.port, "deflate"))
    assert "permessage-deflate" in header and "server_no_context_takeover" in header, header
    _assert_snapshot_frames(frames)


def test_two_clients_decode_the_same_shared_compression(panel):
    async def both():
        return await asyncio.gather(_frames(panel.port, "deflate", 5), _frames(panel.port, "deflate", 5))

    (_h1, first), (_h2, second) = asyncio.run(both())
    _assert_snapshot_frames(first)
    _assert_snapshot_frames(second)
    shared = {f["seq"]: f for f in first}.keys() & {f["seq"]: f for f in second}.keys()
    by_seq = {f["seq"]: f for f in first}
    assert all(by_seq[s] == next(f for f in second if f["seq"] == s) for s in shared)


def test_client_without_deflate_still_gets_plain_frames(panel):
    header, frames = asyncio.run(_frames(panel.port, None))
    assert "permessage-deflate" not in header, header
    _assert_snapshot_frames(frames)


def test_compression_setting_off_answers_offers_uncompressed(tmp_path):
    with fed_panel(tmp_path, WS_COMPRESSION="false") as site:
        header, frames = asyncio.run(_frames(site.port, "deflate"))
    assert "permessage-deflate" not in header, header
    _assert_snapshot_frames(frames)


def test_context_takeover_setting_lets_each_connection_compress_itself(tmp_path):
    with fed_panel(tmp_path, WS_COMPRESSION_TAKEOVER="true") as site:
        header, frames = asyncio.run(_frames(site.port, "deflate", 5))
    assert "permessage-deflate" in header and "server_no_context_takeover" not in header, header
    _assert_snapshot_frames(frames)
