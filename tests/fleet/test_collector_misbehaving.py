"""The collector against real loopback servers that misbehave: each becomes `malformed` or `unreachable`
with its reason, while a good source beside them keeps updating (its clock moves on every poll)."""
from __future__ import annotations

import time

import pytest

from gpu_engine import wire
from statuspanel.fleet.transport import SourceConfig
from statuspanel.fleet.vocabulary import SOURCE_KEYS
from tests.fleet.conftest import wait_until
from tests.fleet.cuzk_server import CuzkServer
from tests.process_support import free_port

INTERVAL = 0.3
EXPECTED = {
    "html": ("malformed", "not-json"),
    "truncated": ("malformed", "not-json"),
    "huge": ("malformed", "too-large"),
    "flood": ("malformed", "too-large"),
    "deep": ("malformed", "too-deep"),
    "hang": ("unreachable", "timeout"),
    "unauthorized": ("unreachable", "unauthorized"),
    "forbidden": ("unreachable", "forbidden"),
}


def _cfg(i: int, name: str, url: str, **extra) -> SourceConfig:
    return SourceConfig(id=i, name=name, kind="cuzk", transport="http", url=url, interval_secs=INTERVAL, **extra)


@pytest.fixture
def servers():
    started = {mode: CuzkServer(mode).start() for mode in ("fixture", *EXPECTED)}
    yield started
    for server in started.values():
        server.stop()


def _source(name: str) -> dict | None:
    snap = wire.default_cache().get(wire.snapshot_key(name))
    return snap["source"] if snap else None


def test_each_bad_server_gets_its_state_and_reason_while_the_good_one_updates(collect, servers) -> None:
    configs = [_cfg(i, f"src-{mode}", server.url) for i, (mode, server) in enumerate(servers.items())]
    configs.append(_cfg(90, "src-refused", f"http://127.0.0.1:{free_port()}"))
    configs.append(_cfg(91, "src-tls", servers["fixture"].url.replace("http://", "https://")))
    configs.append(_cfg(92, "src-dns", "http://no-such-host.invalid:9820"))
    collector = collect(configs)

    wait_until(lambda: (_source("src-fixture") or {}).get("state") == "online", 10, "the good source online")
    uptimes, online_throughout = [], True
    deadline = time.monotonic() + 6.0  # long enough for the hanging source to time out (its read timeout: 1 s)
    while time.monotonic() < deadline:
        snap = wire.default_cache().get(wire.snapshot_key("src-fixture"))
        online_throughout &= snap["source"]["state"] == "online"
        uptimes.append(snap["uptime_secs"])
        time.sleep(0.25)
    assert online_throughout
    assert len(set(uptimes)) >= 10, "the good source kept being polled"
    assert uptimes == sorted(uptimes) and uptimes[-1] - uptimes[0] >= 4.0  # the fixture's clock moves

    for mode, (state, reason) in EXPECTED.items():
        source = wait_until(lambda: (s := _source(f"src-{mode}")) and s["state"] == state and s, 6, f"{mode} {state}")
        assert source["reason"] == reason, (mode, source)
        assert source["error"], mode
    assert _source("src-refused")["reason"] == "refused"
    assert _source("src-tls")["reason"] == "tls"
    assert _source("src-dns")["reason"] == "dns"
    assert "HTML" in _source("src-html")["error"]
    assert "8388608" in _source("src-flood")["error"]  # cut off at the cap, not read to the end
    assert collector.states["src-fixture"].failures == 0


def test_a_good_snapshot_carries_the_source_block_and_keeps_the_data(collect, servers) -> None:
    collect([_cfg(1, "src-good", servers["fixture"].url)])
    snap = wait_until(lambda: (s := wire.default_cache().get(wire.snapshot_key("src-good"))) and
                      s["source"]["state"] == "online" and s, 10, "online")
    assert snap["engine_id"] == "src-good"
    assert set(SOURCE_KEYS) <= snap["source"].keys()
    assert snap["source"]["kind"] == "cuzk" and snap["source"]["transport"] == "http"
    assert snap["source"]["error"] is None and snap["source"]["poll_ms"] > 0
    assert snap["source"]["target"] == servers["fixture"].url + "/status"
    assert snap["pipelines"][0]["job_id"] == "ps-snap-1000-42-7"
    assert snap["consistency"] == []
    assert "src-good" in wire.known_engines()
    seq = snap["seq"]
    wait_until(lambda: wire.default_cache().get(wire.snapshot_key("src-good"))["seq"] > seq, 5, "a newer seq")


def test_one_request_in_flight_per_source_even_when_it_hangs(collect) -> None:
    with CuzkServer("hang") as server:
        collect([_cfg(1, "src-hang", server.url)])
        wait_until(lambda: server.requests >= 3, 15, "three polls of the hanging source")
        assert server.max_in_flight == 1   # the next poll only after the previous one gave up
