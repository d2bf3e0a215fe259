"""The WebSocket frame: one encoder for every snapshot, built once per (engine, seq, format) per process.

`{"type": "snapshot", "engine_id", "seq", "snapshot", "html"}` (`html` left out for `?format=json`).
The page's first paint and every client share these builds: with hundreds of clients a frame is encoded
once per snapshot, not once per client. A snapshot that arrives pre-encoded (the publisher's group
message) is framed around its JSON text as is and parsed at most once, only to render its HTML.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
from typing import Any, Callable

from gpu_engine.schema import SnapshotDocument
from statuspanel.render.cache import LRU
from statuspanel.render.engine import engine_id_of, render_engine, snapshot_cache_key

frame_cache: LRU[str] = LRU(512)

# Frames are built off the server's event loop, one at a time: a fleet sends dozens of snapshots a
# second and a render takes milliseconds, which on the loop would delay every request and frame
# behind it. Clients waiting for the same frame share one build (single flight).
_render_pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="panel-render")
_building: dict[tuple[int, Any], asyncio.Future[str]] = {}


async def _off_loop(key: Any, build: Callable[[], str]) -> str:
    cached = frame_cache.get(key)
    if cached is not None:
        return cached
    loop = asyncio.get_running_loop()
    slot = (id(loop), key)
    future = _building.get(slot)
    if future is None:
        future = loop.run_in_executor(_render_pool, frame_cache.get_or_build, key, build)
        _building[slot] = future
        future.add_done_callback(lambda _f: _building.pop(slot, None))
    return await asyncio.shield(future)  # a client that leaves must not cancel the others' frame


def _encode(engine_id: str, seq: Any, snapshot_json: str, with_html: bool, snap: SnapshotDocument | None = None) -> str:
    """The one frame encoder: the snapshot's JSON text embedded as is; `snap` spares the parse when the
    caller holds the dict already."""
    head = f'{{"type":"snapshot","engine_id":{json.dumps(engine_id)},"seq":{json.dumps(seq)},"snapshot":{snapshot_json}'
    if not with_html:
        return head + "}"
    html = render_engine(json.loads(snapshot_json) if snap is None else snap)
    return head + ',"html":' + json.dumps(html) + "}"


def snapshot_frame(snap: SnapshotDocument, *, with_html: bool) -> str:
    """The encoded frame for this snapshot (the page's first paint, a resync), cached by (engine, seq, format)."""
    def build() -> str:
        return _encode(engine_id_of(snap), snap.get("seq"), json.dumps(snap, separators=(",", ":")), with_html, snap)

    key = snapshot_cache_key(snap)
    return build() if key is None else frame_cache.get_or_build((*key, with_html), build)


async def encoded_snapshot_frame_async(engine_id: str, seq: int, snapshot_json: str, *, with_html: bool) -> str:
    """The frame for a snapshot that arrives pre-encoded (the publisher's group message): built around
    the JSON text as is, parsed at most once per (engine, seq) and only to render the HTML; off the
    event loop, one build shared by every client waiting for it."""
    def build() -> str:
        return _encode(engine_id, seq, snapshot_json, with_html)

    if not with_html:  # a string concatenation: cheaper than the hop to the render thread
        return frame_cache.get_or_build((engine_id, seq, with_html), build)
    return await _off_loop((engine_id, seq, with_html), build)
