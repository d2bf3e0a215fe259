"""A site the way an operator first sees it: `runprover --demo` serving the panel, watching a cuzk
daemon and a source nobody answers, with a job failed for a reason and one cancelled in its history."""
from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fleet.cuzk_server import CuzkServer
from tests.fleet.dashboard import Dashboard, manage
from tests.process_support import free_port

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
TOKEN = "ux-first-hour-operator-token"
ENGINE = "ux-engine"
BAD_ROW = "ux-bad-row"             # a row written around the entry points: failed with the reason
CANCELLED = "ux-cancelled-job"
USER_SNAP = "ux-user-snap-1"       # a user's job at its kind's default priority: claimed before demo work
CUZK = "box-cuzk"
GONE = "box-gone"

# A row the engine refuses (priority out of range), stored the way an operator's SQL would.
BAD_ROW_SCRIPT = (f"from gpu_engine.models import ProofJob; "
                  f"ProofJob.objects.create(job_id={BAD_ROW!r}, proof_kind='porep-c2', priority=5000)")


@dataclass
class UxSite:
    base: str
    token: str
    dashboard: Dashboard

    def api(self, path: str, *, method: str = "GET", body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base}{path}", data=data, method=method,
                                         headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, timeout=15) as response:
            raw = response.read()
            return json.loads(raw) if response.headers.get_content_type() == "application/json" else raw.decode()

    def wait_status(self, job_id: str, status: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            job = self.api(f"/api/jobs/{job_id}")
            if job["status"] == status:
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} is {job['status']}, not {status}, after {timeout:.0f} s")
            time.sleep(0.25)


@pytest.fixture(scope="module")
def ux_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UxSite]:
    workdir = tmp_path_factory.mktemp("ux-site")
    with CuzkServer("fixture") as cuzk, Dashboard(workdir, TOKEN, command=(
            "runprover", "--demo", "--backend", "cpu", "--engine-id", ENGINE)) as dash:
        try:
            dash.add_source(CUZK, "--kind", "cuzk", "--url", cuzk.url, "--interval", "1")
            dash.add_source(GONE, "--kind", "cuzk", "--url", f"http://127.0.0.1:{free_port()}", "--interval", "1")
            manage(dash.env, "shell", "-c", BAD_ROW_SCRIPT)
            dash.start()
            site = UxSite(dash.base, TOKEN, dash)
            site.api("/api/jobs", method="POST", body={"proof_kind": "porep-c2", "job_id": CANCELLED,
                                                       "priority": -1000})
            site.api(f"/api/jobs/{CANCELLED}/cancel", method="POST")
            site.api("/api/jobs", method="POST", body={"proof_kind": "snap-update", "job_id": USER_SNAP})
            site.wait_status(USER_SNAP, "done", 240)
            dash.wait_state(CUZK, "online", 60)
            dash.wait_for(ENGINE, lambda s: (s.get("counters") or {}).get("total_completed", 0) >= 2, 240,
                          "two demo jobs done")
            yield site
        except Exception:
            print(dash.tail())
            raise
