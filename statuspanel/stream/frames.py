"""The WebSocket frame: one encoder for every snapshot, built once per (engine, seq, format) per process.

`{"type": "snapshot", "engine_id", "seq", "snapshot", "html"}` (`html` left out for `?format=json`).
The page's first paint and every client share these builds: with hundreds of clients a frame is encoded
once per snapshot, not once per client. A snapshot that arrives pre-encoded (the publisher's group
message) is framed around its JSON text as is and parsed at most once, only to render its HTML.

No frame is larger than `WS_MAX_FRAME_BYTES` (the server's deliberate outgoing limit; autobahn would
otherwise refuse to send it and close the stream for every viewer, again at every reconnect). The
panel draws a huge engine summarised (render/summary.py); a frame that would still not fit carries
the summarised snapshot instead of the whole one (`truncated` says what was cut and where all of it
is), and failing that the engine's small "too large to show" section: that engine degrades, never
the stream.

Renders run off the event loop on one thread, and snapshots over LARGE_SNAPSHOT_CHARS on a second
one of their own, so a huge engine never queues the others' frames behind its renders; a build that
a newer snapshot of its engine overtook before it started is skipped (its clients get the newer one).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
from typing import Any, Callable

from django.conf import settings

from gpu_engine.schema import SnapshotDocument
from statuspanel.render.cache import LRU
from statuspanel.render.engine import engine_id_of, render_engine_with_tally, render_too_large, snapshot_cache_key
from statuspanel.render.summary import TRUNCATED_KEY, minimal_snapshot, summarised_snapshot
from statuspanel.stream import patches

log = logging.getLogger(__name__)

# The newest 4 snapshots of each engine in both formats: older frames are never asked for again, and
# holding them would grow the process by whole frames with time (statuspanel/render/cache.py).
frame_cache: LRU[str] = LRU(512, per_engine=8)
LARGE_SNAPSHOT_CHARS = 256 * 1024
# A value of a last-resort snapshot larger than this is left out (a foreign engine's giant string).
MINIMAL_VALUE_CHARS = 4096

# Frames are built off the server's event loop, one at a time: a fleet sends dozens of snapshots a
# second and a render takes milliseconds, which on the loop would delay every request and frame
# behind it. Clients waiting for the same frame share one build (single flight).
_render_pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="panel-render")
_large_render_pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="panel-render-large")
_building: dict[tuple[int, Any], asyncio.Future[str | None]] = {}
_newest_seq: dict[str, int] = {}  # engine id -> the newest seq a frame was asked for (set on the loop)


def frame_limit() -> int:
    return int(settings.WS_MAX_FRAME_BYTES)


def frame_size(frame: str) -> int:
    """Bytes on the wire (frames are ASCII unless a snapshot arrived with raw non-ASCII text)."""
    return len(frame) if frame.isascii() else len(frame.encode())


def _unless_superseded(key: Any, engine_id: str, seq: int, build: Callable[[], str]) -> str | None:
    if _newest_seq.get(engine_id, seq) > seq:
        return None  # a newer snapshot of this engine is queued: render that one instead
    return frame_cache.get_or_build(key, build)


async def _off_loop(key: Any, engine_id: str, seq: int, large: bool, build: Callable[[], str]) -> str | None:
    cached = frame_cache.get(key)
    if cached is not None:
        return cached
    loop = asyncio.get_running_loop()
    slot = (id(loop), key)
    future = _building.get(slot)
    if future is None:
        pool = _large_render_pool if large else _render_pool
        future = loop.run_in_executor(pool, _unless_superseded, key, engine_id, seq, build)
        _building[slot] = future
        future.add_done_callback(lambda _f: _building.pop(slot, None))
    return await asyncio.shield(future)  # a client that leaves must not cancel the others' frame


def _assemble(engine_id: str, seq: Any, snapshot_json: str, html: str | None) -> str:
    head = f'{{"type":"snapshot","engine_id":{json.dumps(engine_id)},"seq":{json.dumps(seq)},"snapshot":{snapshot_json}'
    return head + "}" if html is None else head + ',"html":' + json.dumps(html) + "}"


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _encode(engine_id: str, seq: Any, snapshot_json: str, with_html: bool, snap: SnapshotDocument | None = None) -> str:
    """The one frame encoder: the snapshot's JSON text embedded as is; `snap` spares the parse when the
    caller holds the dict already. Never longer than `frame_limit()`."""
    html = tally = None
    if with_html:
        snap = json.loads(snapshot_json) if snap is None else snap
        html, tally = render_engine_with_tally(snap)
    frame = _assemble(engine_id, seq, snapshot_json, html)
    size, limit = frame_size(frame), frame_limit()
    if size <= limit:
        _hold(engine_id, seq, snapshot_json, html, snap)
        return frame
    return _degraded(engine_id, seq, json.loads(snapshot_json) if snap is None else snap, html, tally, size, limit)


def _hold(engine_id: str, seq: Any, snapshot_json: str, html: str | None, snap: SnapshotDocument | None) -> None:
    """Keep what this whole frame carried, split into regions here (off the loop), for patches."""
    if not isinstance(seq, int):
        return
    if html is None:
        patches.hold(engine_id, seq, False, snapshot_json)
    else:
        counters = snap.get("counters") if isinstance(snap, dict) else None
        patches.hold(engine_id, seq, True, patches.split_sections(html, counters))


def _degraded(engine_id: str, seq: Any, snap: SnapshotDocument, html: str | None, tally: dict[str, Any] | None,
              size: int, limit: int) -> str:
    """A frame over the limit: the summarised snapshot with the same section, else the engine's small
    "too large to show" section and the snapshot's small fixed parts."""
    frame = _assemble(engine_id, seq, _compact(summarised_snapshot(snap)), html)
    if frame_size(frame) <= limit:
        log.info("engine %s: a %d-byte frame sent with its snapshot summarised", engine_id, size)
        return frame
    reason = f"a {size}-byte frame is over the {limit}-byte limit"
    small = {k: v for k, v in minimal_snapshot(snap, reason).items() if len(_compact(v)) <= MINIMAL_VALUE_CHARS}
    small.setdefault(TRUNCATED_KEY, {"reason": reason})
    section = None if html is None else render_too_large(small, tally or {}, size, limit)
    frame = _assemble(engine_id, seq, _compact(small), section)
    log.warning("engine %s: %s; sent as too large to show", engine_id, reason)
    if frame_size(frame) <= limit:
        return frame
    bare = _compact({"engine_id": engine_id, "seq": seq, TRUNCATED_KEY: {"reason": reason}})
    return _assemble(engine_id, seq, bare, None if html is None else "")


def snapshot_frame(snap: SnapshotDocument, *, with_html: bool) -> str:
    """The encoded frame for this snapshot (the page's first paint, a resync), cached by (engine, seq, format)."""
    def build() -> str:
        return _encode(engine_id_of(snap), snap.get("seq"), json.dumps(snap, separators=(",", ":")), with_html, snap)

    key = snapshot_cache_key(snap)
    return build() if key is None else frame_cache.get_or_build((*key, with_html), build)


async def encoded_snapshot_frame_async(engine_id: str, seq: int, snapshot_json: str, *,
                                       with_html: bool) -> str | None:
    """The frame for a snapshot that arrives pre-encoded (the publisher's group message): built around
    the JSON text as is, parsed at most once per (engine, seq) and only to render the HTML; off the
    event loop, one build shared by every client waiting for it. None when a newer snapshot of the
    engine overtook this one before its build started (the newer frame follows)."""
    def build() -> str:
        return _encode(engine_id, seq, snapshot_json, with_html)

    large = len(snapshot_json) > LARGE_SNAPSHOT_CHARS
    if not with_html and not large:  # a string concatenation: cheaper than the hop to the render thread
        return frame_cache.get_or_build((engine_id, seq, with_html), build)
    if seq > _newest_seq.get(engine_id, -1):
        _newest_seq[engine_id] = seq
    return await _off_loop((engine_id, seq, with_html), engine_id, seq, large, build)
