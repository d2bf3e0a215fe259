"""`manage.py watchfleet` as a real process on loopback: sources that hang, flood and answer garbage
do not stall the good one or the web server (/healthz answers at once throughout)."""
from __future__ import annotations

import json
import time
import urllib.request

import pytest

from tests.fleet.cuzk_server import CuzkServer
from tests.fleet.dashboard import Dashboard

pytestmark = pytest.mark.slow
TOKEN = "watchfleet-loopback-token-01"
BAD = ("hang", "huge", "flood", "html", "truncated", "deep")


def test_bad_sources_never_stall_the_good_one_or_the_web_server(tmp_path) -> None:
    servers = {mode: CuzkServer(mode).start() for mode in ("race", *BAD)}
    try:
        with Dashboard(tmp_path, TOKEN) as dash:
            for mode, server in servers.items():
                dash.add_source(f"box-{mode}", "--kind", "cuzk", "--url", server.url, "--interval", "0.5")
            dash.start()
            first = dash.wait_state("box-race", "online", 30)
            dash.wait_state("box-hang", "unreachable", 30)
            for mode in BAD[1:]:
                dash.wait_state(f"box-{mode}", "malformed", 30)
            seen = set()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                # a stalled server would time the client out: every answer must come back
                with urllib.request.urlopen(f"{dash.base}/healthz", timeout=2) as response:
                    assert response.status == 200
                    assert b'"fleet_collector": true' in response.read()
                snap = dash.fleet()["box-race"]
                assert snap["source"]["state"] == "online"
                seen.add(snap["seq"])
                time.sleep(0.2)
            assert len(seen) >= 5 and min(seen) > first["seq"], "the good source kept updating"
            race = dash.wait_for("box-race", lambda s: len(s["consistency"]) == 2, 15, "the race step")
            assert {c["problem"] for c in race["consistency"]} == {"no-worker"}
            _stream_carries_sources(dash)
    finally:
        for server in servers.values():
            server.stop()


def _stream_carries_sources(dash: Dashboard) -> None:
    """The WebSocket stream carries the sources like local engines: the latest on connect, then new ones."""
    from websockets.sync.client import connect

    frames: dict[str, list[dict]] = {}
    with connect(f"ws://127.0.0.1:{dash.port}/ws/status/?token={TOKEN}&format=json",
                 origin=f"http://127.0.0.1:{dash.port}", open_timeout=10) as ws:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(frames.get("box-race", [])) < 3:
            frame = json.loads(ws.recv(timeout=5))
            if frame.get("type") == "snapshot":
                frames.setdefault(frame["engine_id"], []).append(frame["snapshot"])
    assert {f"box-{m}" for m in BAD} <= set(frames), sorted(frames)
    race = frames["box-race"]
    assert len(race) >= 3 and race[-1]["seq"] > race[0]["seq"]
    assert race[-1]["source"]["state"] == "online"
