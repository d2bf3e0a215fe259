"""Chromium against a dashboard watching a fleet of three: a cuzk daemon (the cuzk-like server, held
in the split-proving race), one of ours (`runprover --demo` read with its status token) and a source
nobody answers. Each shows its state, kinds carry whole labels (an unknown one as it comes), the race
warning names its job and partition on the cuzk engine, and a collapsed engine stays collapsed
across a reload. And a fleet of fifty starts collapsed to its summary rows and stays usable.
Screenshots go to test-artifacts/."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from tests.fleet.cuzk_server import RACE_JOB, CuzkServer, load_fixture
from tests.fleet.dashboard import STATE_OF, Dashboard, DemoEngine
from tests.fleet.dashboard import engine_section as _section
from tests.process_support import free_port

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
TOKEN = "fleet-browser-operator-token"
STATUS_TOKEN = "fleet-browser-status-token"
UNKNOWN_KIND = "ni-porep-aggregate-experimental-v2"
RACE_STEP = 1  # race_steps(): p5 and p6 in gpu, both workers idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def fleet(tmp_path):
    doc = load_fixture()
    doc["pipelines"][1]["proof_kind"] = UNKNOWN_KIND
    with CuzkServer("race", doc=doc, freeze_step=RACE_STEP) as cuzk, Dashboard(tmp_path / "dash", TOKEN) as dash, \
            DemoEngine(tmp_path / "ours", STATUS_TOKEN) as ours:
        dash.add_sources([
            ["box-cuzk", "--kind", "cuzk", "--url", cuzk.url, "--interval", "1"],
            ours.source("box-ours", "--interval", "1"),
            ["box-gone", "--kind", "cuzk", "--url", f"http://127.0.0.1:{free_port()}", "--interval", "1"],
        ])
        dash.start()
        ours.wait()
        yield dash.base


def test_fleet_of_three_in_chromium(fleet, panel_login):
    base = fleet
    ARTIFACTS.mkdir(exist_ok=True)
    page = panel_login(base, TOKEN)
    page.wait_for_selector("[data-conn].conn-live", timeout=15_000)
    for engine, state in (("box-cuzk", "online"), ("box-ours", "online"), ("box-gone", "unreachable")):
        page.wait_for_function(f"() => ({STATE_OF})({json.dumps(engine)}) === {json.dumps(state)}", timeout=60_000)

    # The unreachable one says why; the online ones their poll latency.
    gone = page.locator(_section("box-gone"))
    assert "refused" in gone.locator(".source-error").inner_text().lower()
    assert gone.locator("[data-source-detail]").inner_text().strip() != ""
    for engine in ("box-cuzk", "box-ours"):
        assert page.locator(f"{_section(engine)} [data-source-detail]").inner_text().startswith("poll ")
    assert page.locator(f"{_section('box-cuzk')} .tag.source-kind").inner_text() == "cuzk"
    assert page.locator(f"{_section('box-ours')} .tag.source-kind").inner_text() == "vastmanager"

    # The race: visible on the cuzk engine, with the job and each partition.
    cuzk = page.locator(_section("box-cuzk"))
    warning = cuzk.locator("[data-region=consistency]")
    assert warning.is_visible()
    for p in (5, 6):
        item = warning.locator(f'li[data-job-id="{RACE_JOB}"][data-partition="{p}"]')
        assert item.is_visible() and RACE_JOB in item.inner_text() and f"partition {p}" in item.inner_text()
    assert cuzk.locator(".cell.inconsistent").count() == 2
    assert page.locator(f"{_section('box-ours')} [data-region=consistency]").count() == 0

    # Whole labels: the known kind by its full label, the unknown one exactly as the daemon named it.
    kinds = cuzk.locator("tr.pipeline .kind").all_inner_texts()
    assert "SnapDeals Update (ReplicaUpdate)" in kinds and UNKNOWN_KIND in kinds
    for el in cuzk.locator("tr.pipeline .kind").element_handles():
        assert el.evaluate("e => e.scrollWidth <= e.clientWidth + 1")  # drawn whole, not cut
    # cuzk's own panels.
    assert cuzk.locator('[data-region=cuzk] tr[data-pool="SRS"]').is_visible()
    assert cuzk.locator('[data-region=cuzk] [data-buffer="synth_in_flight"]').is_visible()

    # The fleet summary adds them up: two of three online, one failing, the race counted.
    page.wait_for_function("() => document.querySelector('[data-sum=online]').textContent === '2'", timeout=15_000)
    assert page.inner_text("[data-sum=engines]") == "3"
    assert page.inner_text("[data-sum=failing]") == "1"
    assert page.locator('#fleet [data-engine-link="box-gone"]').is_visible()
    assert int(page.inner_text("[data-sum=warnings]")) >= 2
    page.screenshot(path=str(ARTIFACTS / "fleet-three.png"), full_page=True)

    # Collapse the cuzk engine: its details go, its row and its race warning stay; a reload keeps it.
    cuzk.locator("[data-collapse-toggle]").click()
    assert cuzk.get_attribute("class").split().count("collapsed") == 1
    assert not cuzk.locator("[data-region=workers]").is_visible()
    assert cuzk.locator("[data-region=header]").is_visible() and warning.is_visible()
    page.reload()
    page.wait_for_selector("[data-conn].conn-live", timeout=15_000)
    cuzk = page.locator(_section("box-cuzk"))
    assert "collapsed" in cuzk.get_attribute("class").split()
    assert not cuzk.locator("[data-region=workers]").is_visible()
    assert "collapsed" not in page.locator(_section("box-ours")).get_attribute("class").split()
    # Still collapsed after live frames replaced its regions.
    seq = int(cuzk.locator(".engine-body").get_attribute("data-seq"))
    page.wait_for_function(f"() => +document.querySelector('{_section('box-cuzk')} .engine-body').dataset.seq > {seq}",
                           timeout=15_000)
    assert not cuzk.locator("[data-region=workers]").is_visible()
    page.screenshot(path=str(ARTIFACTS / "fleet-collapsed.png"), full_page=True)
    cuzk.locator("[data-collapse-toggle]").click()
    page.reload()
    assert page.locator(f"{_section('box-cuzk')} [data-region=workers]").is_visible()
    assert page.js_errors == []


FIFTY = 50


@pytest.fixture
def fifty(tmp_path):
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(CuzkServer("race" if i == 7 else "fixture", freeze_step=RACE_STEP))
                   for i in range(FIFTY)]
        dash = stack.enter_context(Dashboard(tmp_path / "dash", TOKEN))
        dash.add_sources([[f"gpu-{i:02d}", "--kind", "cuzk", "--url", s.url, "--interval", "1.5"]
                          for i, s in enumerate(servers)])
        dash.start()
        yield dash


ROW_HEIGHTS = """() => Array.from(document.querySelectorAll('#engines > section.engine'))
  .map(s => s.getBoundingClientRect().height)"""


def test_fifty_engines_start_collapsed_to_their_rows(fifty, panel_login):
    dash = fifty
    base = dash.base
    page = panel_login(base, TOKEN, width=1400, height=1000)
    page.wait_for_selector("[data-conn].conn-live", timeout=15_000)
    page.wait_for_function(f"() => document.querySelector('[data-sum=online]').textContent === '{FIFTY}'",
                           timeout=60_000)
    page.reload()  # the page as an operator opens it, every engine known
    page.wait_for_selector("[data-conn].conn-live", timeout=15_000)
    assert page.locator("#engines > section.engine").count() == FIFTY
    assert page.locator("#engines > section.engine.collapsed").count() == FIFTY
    heights = page.evaluate(ROW_HEIGHTS)
    assert max(heights) < 160, max(heights)  # one summary row each (the racing one with its warning)
    assert sorted(heights)[FIFTY // 2] < 60
    assert page.locator("#engines [data-region=workers]:visible").count() == 0
    assert page.locator('section.engine[data-engine-id="gpu-07"] [data-region=consistency]').is_visible()
    assert page.inner_text("[data-sum=engines]") == str(FIFTY)
    page.screenshot(path=str(ARTIFACTS / "fleet-fifty.png"), full_page=True)

    # Live: rows keep updating under the collapsed sections, and opening one shows it whole at once.
    first = page.locator('section.engine[data-engine-id="gpu-30"] .engine-body')
    seq = int(first.get_attribute("data-seq"))
    page.wait_for_function("(s) => +document.querySelector('section.engine[data-engine-id=\"gpu-30\"] "
                           ".engine-body').dataset.seq > s", arg=seq, timeout=15_000)
    page.locator('section.engine[data-engine-id="gpu-30"] [data-collapse-toggle]').click()
    assert page.locator('section.engine[data-engine-id="gpu-30"] [data-region=workers]').is_visible()
    page.click("[data-collapse-all='0']")
    assert page.locator("#engines > section.engine.collapsed").count() == 0
    page.click("[data-collapse-all='1']")
    assert page.locator("#engines > section.engine.collapsed").count() == FIFTY
    page.locator('section.engine[data-engine-id="gpu-30"] [data-collapse-toggle]').click()
    page.reload()
    page.wait_for_selector("[data-conn].conn-live", timeout=15_000)
    assert page.locator("#engines > section.engine.collapsed").count() == FIFTY - 1
    assert "collapsed" not in page.locator('section.engine[data-engine-id="gpu-30"]').get_attribute("class").split()
    # Without JavaScript nothing can be opened, so nothing is hidden.
    nojs = panel_login(base, TOKEN, javascript=False)
    assert nojs.locator("#engines [data-region=workers]:visible").count() == FIFTY
    # A source added while the page is open arrives live, collapsed like the rest (it never was chosen).
    with CuzkServer("fixture") as late:
        dash.add_sources([["gpu-late", "--kind", "cuzk", "--url", late.url, "--interval", "1.5"]])
        page.wait_for_selector('section.engine[data-engine-id="gpu-late"] [data-source-state="online"]',
                               timeout=30_000)
        assert "collapsed" in page.locator('section.engine[data-engine-id="gpu-late"]').get_attribute("class").split()
        ids = page.eval_on_selector_all("#engines > section.engine", "ss => ss.map(s => s.dataset.engineId)")
        assert ids == sorted(ids) and ids[-1] == "gpu-late"
        page.wait_for_function(f"() => document.querySelector('[data-sum=engines]').textContent === '{FIFTY + 1}'",
                               timeout=10_000)
    assert page.js_errors == []
