"""Chromium against a dashboard watching cuzk daemons over gRPC: one through gRPC alone, one merged
with its HTTP status, and one of ours beside them. The gRPC engines show their GPU by name with its
VRAM bar and jobs, the queues as they change and the SRS tier; the gRPC-only one says partitions
need `status_listen`, the merged one shows its pipelines. Screenshots at 1440 and 420 px go to
test-artifacts/; at 420 px nothing in the gRPC region is wider than the page."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fleet.cuzk_grpc_server import GPU_NAME, CuzkGrpcServer
from tests.fleet.cuzk_server import CuzkServer
from tests.fleet.dashboard import STATE_OF, Dashboard, DemoEngine
from tests.fleet.dashboard import engine_section as _section

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
TOKEN = "fleet-grpc-browser-operator-token"
STATUS_TOKEN = "fleet-grpc-browser-status-token"

pytestmark = [pytest.mark.browser, pytest.mark.slow]

QUEUES_OF = """(id) => Array.from(document.querySelectorAll(
  'section.engine[data-engine-id="' + id + '"] [data-queue]')).map(r => r.dataset.queue + ':' + r.dataset.pending
  + '/' + r.dataset.inProgress).join(' ')"""


@pytest.fixture
def fleet(tmp_path):
    with CuzkGrpcServer("script", step_secs=1.5) as grpc_server, CuzkServer("fixture") as http, \
            Dashboard(tmp_path / "dash", TOKEN) as dash, DemoEngine(tmp_path / "ours", STATUS_TOKEN) as ours:
        dash.add_sources([
            ["box-grpc", "--kind", "cuzk", "--grpc", grpc_server.target, "--interval", "1"],
            ["box-merged", "--kind", "cuzk", "--url", http.url, "--grpc", grpc_server.target, "--interval", "1"],
            ours.source("box-ours", "--interval", "1"),
        ])
        dash.start()
        ours.wait()
        yield dash.base


def test_grpc_engines_in_chromium_at_1440_and_420(fleet, panel_login) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    for width in (1440, 420):
        page = panel_login(fleet, TOKEN, width=width, height=1000)
        page.wait_for_selector("[data-conn].conn-live", timeout=15_000)
        for engine in ("box-grpc", "box-merged", "box-ours"):
            page.wait_for_function(f"() => ({STATE_OF})({json.dumps(engine)}) === 'online'", timeout=60_000)
        for engine in ("box-grpc", "box-merged"):
            region = page.locator(f"{_section(engine)} [data-region='grpc']")
            gpu = region.locator("[data-gpu-name]")
            assert gpu.get_attribute("data-gpu-name") == GPU_NAME
            assert GPU_NAME in gpu.inner_text() and " / 24.0 GiB" in gpu.inner_text()
            assert region.locator("[data-tier='hot'] .tag").inner_text().strip() == "hot"
        # The queues change on the page as the daemon's do (one WebSocket frame at a time).
        first = page.evaluate(f"({QUEUES_OF})('box-grpc')")
        page.wait_for_function(f"() => ({QUEUES_OF})('box-grpc') !== {json.dumps(first)}", timeout=15_000)
        grpc_only = page.locator(_section("box-grpc"))
        assert "status_listen" in grpc_only.locator("[data-grpc-only]").inner_text()
        assert page.locator(f"{_section('box-merged')} [data-grpc-only]").count() == 0
        assert page.locator(f"{_section('box-merged')} [data-region='pipelines'] tr.pipeline").count() >= 1
        assert page.locator(f"{_section('box-ours')} [data-region='grpc']").count() == 0
        if width == 420:  # nothing of the region sticks out of a phone's page (tables scroll inside)
            overflow = page.evaluate("""() => Array.from(document.querySelectorAll('[data-region="grpc"]'))
              .some(r => r.getBoundingClientRect().right > document.documentElement.clientWidth + 1)""")
            assert not overflow
        page.screenshot(path=str(ARTIFACTS / f"fleet-grpc-{width}.png"), full_page=True)
        assert page.js_errors == []
        page.context.close()
