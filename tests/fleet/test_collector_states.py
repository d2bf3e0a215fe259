"""A source's state over time: online -> stale (a poll hangs past 2 intervals) -> unreachable (timeout);
malformed and back; refused while down, online again once it is back; each change recorded once."""
from __future__ import annotations

import random

import pytest

from gpu_engine import wire
from statuspanel.fleet.poller import BACKOFF_MAX_SECS, backoff_delay
from statuspanel.fleet.transport import SourceConfig
from tests.fleet.conftest import wait_until
from tests.fleet.cuzk_server import CuzkServer

INTERVAL = 0.3


def _state(name: str) -> str | None:
    snap = wire.default_cache().get(wire.snapshot_key(name))
    return snap["source"]["state"] if snap else None


def test_a_hanging_source_goes_stale_then_unreachable_and_recovers(collect) -> None:
    with CuzkServer("fixture") as server:
        collector = collect([SourceConfig(id=1, name="box", kind="cuzk", transport="http", url=server.url,
                                          interval_secs=INTERVAL)])
        wait_until(lambda: _state("box") == "online", 10, "online")
        server.mode = "hang"
        snap = wait_until(lambda: (s := wire.default_cache().get(wire.snapshot_key("box"))) and
                          s["source"]["state"] == "stale" and s, 5, "stale")
        assert snap["source"]["last_ok_secs_ago"] > 2 * INTERVAL
        assert snap["pipelines"], "the last good data stays, marked stale"
        wait_until(lambda: _state("box") == "unreachable", 6, "unreachable by timeout")
        server.mode = "fixture"
        wait_until(lambda: _state("box") == "online", 10, "online again")
    assert collector.recorder.states("box") == ["online", "stale", "unreachable", "online"]


def test_malformed_and_back(collect) -> None:
    with CuzkServer("fixture") as server:
        collector = collect([SourceConfig(id=1, name="box", kind="cuzk", transport="http", url=server.url,
                                          interval_secs=INTERVAL)])
        wait_until(lambda: _state("box") == "online", 10, "online")
        server.mode = "html"
        wait_until(lambda: _state("box") == "malformed", 5, "malformed")
        server.mode = "fixture"
        wait_until(lambda: _state("box") == "online", 10, "online again")
    events = [e for e in collector.recorder.events if e[0] == "box"]
    assert [(e[1], e[2], e[3]) for e in events] == [("", "online", ""), ("online", "malformed", "not-json"),
                                                    ("malformed", "online", "")]


def test_a_server_that_goes_away_is_refused_then_online_when_back(collect) -> None:
    server = CuzkServer("fixture").start()
    port = server.port
    collect([SourceConfig(id=1, name="box", kind="cuzk", transport="http", url=server.url, interval_secs=INTERVAL)])
    wait_until(lambda: _state("box") == "online", 10, "online")
    server.stop()
    wait_until(lambda: _state("box") == "unreachable", 5, "unreachable")
    assert wire.default_cache().get(wire.snapshot_key("box"))["source"]["reason"] in ("refused", "network")
    with CuzkServer("fixture", port=port):
        # retried within the backoff cap (8 intervals)
        wait_until(lambda: _state("box") == "online", 8 * INTERVAL + 5, "online again")


def test_backoff_doubles_from_one_interval_to_its_cap_with_jitter() -> None:
    cfg = SourceConfig(id=1, name="x", kind="cuzk", transport="http", url="http://h", interval_secs=1.5)
    assert backoff_delay(cfg, 1, rng=lambda: 1.0) == 1.5
    assert backoff_delay(cfg, 2, rng=lambda: 1.0) == 3.0
    assert backoff_delay(cfg, 3, rng=lambda: 1.0) == 6.0
    assert backoff_delay(cfg, 30, rng=lambda: 1.0) == 12.0            # 8 intervals
    assert backoff_delay(cfg, 30, rng=lambda: 0.0) == 6.0             # jitter: half to all of it
    slow = SourceConfig(id=1, name="x", kind="cuzk", transport="http", url="http://h", interval_secs=60)
    assert backoff_delay(slow, 10, rng=lambda: 1.0) == BACKOFF_MAX_SECS
    rng = random.Random(7)
    draws = {round(backoff_delay(cfg, 4, rng=rng.random), 3) for _ in range(20)}
    assert len(draws) > 10 and all(6.0 <= d <= 12.0 for d in draws)


@pytest.mark.parametrize("interval,connect,read", [(0.2, 1.0, 1.0), (1.5, 1.5, 1.5), (60, 10.0, 30.0)])
def test_timeouts_follow_the_interval(interval: float, connect: float, read: float) -> None:
    cfg = SourceConfig(id=1, name="x", kind="cuzk", transport="http", url="http://h", interval_secs=interval)
    assert (cfg.connect_timeout, cfg.read_timeout) == (connect, read)
