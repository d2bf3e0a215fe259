"""What the stream's caches hold: the newest builds of each engine and the compressed frames in flight,
never every frame a busy engine published (that grew the serving process with time: the slow-client
test's bound, tests/panel/test_slow_clients.py)."""
from __future__ import annotations

import asyncio
import json
import zlib

import pytest

from statuspanel.render import engine as rendering
from statuspanel.render.cache import LRU
from statuspanel.stream import frames
from tests.panel.helpers import busy_tracker
from vastmanager.wscompress import SharedDeflate


def _fill(cache: LRU[str], engine: str, seqs: range) -> list[tuple[str, int]]:
    built = []
    for seq in seqs:
        cache.get_or_build((engine, seq), lambda e=engine, s=seq: built.append((e, s)) or f"{e}:{s}")
    return built


def test_a_busy_engine_keeps_only_its_newest_builds_and_never_evicts_a_quiet_one():
    cache: LRU[str] = LRU(100, per_engine=3)
    _fill(cache, "quiet", range(1))
    _fill(cache, "busy", range(50))
    assert [s for s in range(50) if cache.get(("busy", s)) is not None] == [47, 48, 49]
    assert cache.get(("quiet", 0)) == "quiet:0"
    assert _fill(cache, "busy", range(49, 50)) == []  # the newest is a hit
    assert _fill(cache, "busy", range(10, 11)) == [("busy", 10)]  # an old one is built again


def test_the_total_size_still_bounds_many_engines():
    cache: LRU[str] = LRU(4, per_engine=3)
    for engine in "abcdef":
        _fill(cache, engine, range(2))
    held = [(e, s) for e in "abcdef" for s in range(2) if cache.get((e, s)) is not None]
    assert held == [("e", 0), ("e", 1), ("f", 0), ("f", 1)]
    # An engine evicted by the total bound starts afresh: all its per-engine slots are free again.
    _fill(cache, "a", range(10, 13))
    assert [cache.get(("a", s)) for s in range(10, 13)] == ["a:10", "a:11", "a:12"]


def test_without_a_per_engine_bound_it_is_the_plain_lru():
    cache: LRU[str] = LRU(5)
    _fill(cache, "busy", range(20))
    assert [s for s in range(20) if cache.get(("busy", s)) is not None] == [15, 16, 17, 18, 19]


@pytest.mark.parametrize(("size", "per_engine"), [(0, None), (10, 0), (10, -1)])
def test_bounds_below_one_are_refused(size, per_engine):
    with pytest.raises(ValueError):
        LRU(size, per_engine=per_engine)


@pytest.mark.usefixtures("fresh_render_caches")
def test_frame_and_html_caches_hold_the_newest_snapshots_of_an_engine_not_every_one():
    snap = busy_tracker().snapshot()
    snap["engine_id"] = "box-1"
    other = dict(snap, engine_id="box-2", seq=1)
    frames.snapshot_frame(other, with_html=True)
    for seq in range(1, 41):
        text = json.dumps({**snap, "seq": seq})
        for with_html in (True, False):
            assert asyncio.run(frames.encoded_snapshot_frame_async("box-1", seq, text, with_html=with_html))
    kept = [(s, h) for s in range(1, 41) for h in (True, False) if frames.frame_cache.get(("box-1", s, h))]
    assert kept == [(s, h) for s in range(37, 41) for h in (True, False)]
    assert [s for s in range(1, 41) if rendering.html_cache.get(("box-1", s))] == [37, 38, 39, 40]
    assert frames.frame_cache.get(("box-2", 1, True)) is not None  # another engine's frame stays
    assert rendering.html_cache.get(("box-2", 1)) is not None


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _inflate(data: bytes) -> bytes:
    return zlib.decompressobj(-15).decompress(data + b"\x00\x00\xff\xff")


def test_shared_deflate_lets_go_of_frames_no_connection_sent_lately():
    clock = _Clock()
    shared = SharedDeflate(size=256, idle_secs=2.0, clock=clock)
    old = json.dumps({"seq": 1, "pad": "x" * 5000}).encode()
    first = shared.compress(old, 15, 8)
    assert _inflate(first) == old
    assert shared.compress(bytes(bytearray(old)), 15, 8) is first  # another connection's copy: a hit
    for seq in range(2, 30):  # an engine publishing for a minute, 2 frames a second
        clock.now += 0.5
        shared.compress(json.dumps({"seq": seq, "pad": "y" * 5000}).encode(), 15, 8)
    assert len(shared) == 5  # the frames of the last 2 s, not all 29
    assert shared.hits == 1 and shared.misses == 29
    assert shared.compress(old, 15, 8) is not first and shared.misses == 30  # compressed afresh


def test_shared_deflate_keeps_a_frame_in_use_and_its_size_bound():
    clock = _Clock()
    shared = SharedDeflate(size=3, idle_secs=2.0, clock=clock)
    hot = b"h" * 1000
    shared.compress(hot, 15, 8)
    for n in range(10):
        clock.now += 1.0
        shared.compress(hot, 15, 8)  # still being sent: stays
        shared.compress(bytes([n]) * 1000, 15, 8)
    assert len(shared) <= 3
    assert shared.misses == 11 and shared.hits == 10


@pytest.mark.parametrize(("size", "idle"), [(0, 2.0), (10, 0.0), (10, float("nan"))])
def test_shared_deflate_refuses_bounds_it_cannot_keep(size, idle):
    with pytest.raises(ValueError):
        SharedDeflate(size=size, idle_secs=idle)
