"""`runprover` serving runs the fleet collector too: its own engine and a cuzk source side by side in
`GET /api/fleet`; with `--no-fleet` it polls nothing."""
from __future__ import annotations

import json
import urllib.request

import pytest

from tests.fleet.cuzk_server import CuzkServer
from tests.fleet.dashboard import Dashboard

pytestmark = pytest.mark.slow
TOKEN = "runprover-fleet-token-0123"


def _healthz(dash: Dashboard) -> dict:
    with urllib.request.urlopen(f"{dash.base}/healthz", timeout=5) as response:
        return json.loads(response.read())


def test_runprover_shows_its_engine_beside_a_cuzk_source(tmp_path) -> None:
    with CuzkServer("race", freeze_step=1) as cuzk:
        with Dashboard(tmp_path, TOKEN, command=("runprover", "--backend", "cpu", "--engine-id", "dash-engine",
                                                 "--proving-processes", "0")) as dash:
            dash.add_source("cuzk-box", "--kind", "cuzk", "--url", cuzk.url, "--interval", "0.5")
            dash.start()
            assert _healthz(dash) == {"ok": True, "engine_running": True, "fleet_collector": True}
            snap = dash.wait_state("cuzk-box", "online", 30)
            assert [c["problem"] for c in snap["consistency"]] == ["no-worker", "no-worker"]
            local = dash.wait_for("dash-engine", lambda s: True, 30, "the local engine")
            assert local["source"]["transport"] == "local" and local["consistency"] == []


def test_no_fleet_polls_nothing(tmp_path) -> None:
    with CuzkServer("fixture") as cuzk:
        with Dashboard(tmp_path, TOKEN, command=("runprover", "--backend", "cpu", "--engine-id", "solo",
                                                 "--proving-processes", "0", "--no-fleet")) as dash:
            dash.add_source("cuzk-box", "--kind", "cuzk", "--url", cuzk.url, "--interval", "0.5")
            dash.start()
            assert _healthz(dash)["fleet_collector"] is False
            dash.wait_for("solo", lambda s: True, 30, "the local engine")
            assert "cuzk-box" not in dash.fleet() and cuzk.requests == 0
