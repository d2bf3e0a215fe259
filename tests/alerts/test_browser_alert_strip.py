"""Chromium against a real dashboard (`watchfleet`) over two cuzk-like stand-ins: the page opens
with no alert (no strip), then one stand-in goes dark and the other enters the split-proving race
and stays there; the strip appears live (no reload) with both rules, whole labels and ages that
grow, badges on the engine sections, the source header and the partition cells; acknowledge and
silence are recorded (who, when) and survive a reload; a bad silence length is answered in place.
Screenshots at 1440 and 420 px go to test-artifacts/; at 420 px nothing overflows sideways."""
from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from statuspanel.auth import SERVICE_USERNAME
from tests.fleet.cuzk_server import RACE_JOB, CuzkServer
from tests.fleet.dashboard import Dashboard, manage

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
TOKEN = "alerts-browser-operator-token"
RACE, SETTLED = 1, 3  # tests/fleet/cuzk_server.py's race_steps: held race; all settled

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def fleet(tmp_path):
    with CuzkServer("race", freeze_step=SETTLED) as racer, CuzkServer("fixture") as dark, \
            Dashboard(tmp_path / "dash", TOKEN) as dash:
        manage(dash.env, "setalertrule", "source-down", "--for", "1")
        for quiet in ("gpu-idle-while-queued", "failure-burst", "partition-stuck"):  # the first turned on later
            manage(dash.env, "setalertrule", quiet, "--disable")
        dash.add_source("box-race", "--kind", "cuzk", "--url", racer.url, "--interval", "0.5")
        dash.add_source("box-dark", "--kind", "cuzk", "--url", dark.url, "--interval", "0.5")
        try:
            dash.start()
            yield dash, racer, dark
        except Exception:
            print(dash.tail())
            raise


def _api_alerts(dash: Dashboard) -> list[dict]:
    request = urllib.request.Request(f"{dash.base}/api/alerts", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["alerts"]


def _item(engine: str, rule: str) -> str:
    return f'#alerts li.alert[data-engine="{engine}"][data-rule="{rule}"]'


NO_SIDEWAYS_OVERFLOW = """() => {
  const doc = document.documentElement, strip = document.getElementById('alerts');
  const r = strip.getBoundingClientRect();
  const cut = Array.from(strip.querySelectorAll('li.alert, .alert-msg, .alert-where, .alert-rule'))
    .filter(e => e.scrollWidth > e.clientWidth + 1).length;
  return {page: doc.scrollWidth - doc.clientWidth, stripRight: r.right - doc.clientWidth, cut: cut};
}"""


def test_alert_strip_live_acknowledge_and_silence_in_chromium(fleet, panel_login) -> None:
    dash, racer, dark = fleet
    ARTIFACTS.mkdir(exist_ok=True)
    page = panel_login(dash.base, TOKEN, width=1440, height=1000)
    page.wait_for_selector("[data-conn].conn-live", timeout=15_000)
    for engine in ("box-race", "box-dark"):
        page.wait_for_selector(f'section.engine[data-engine-id="{engine}"] [data-source-state="online"]',
                               timeout=60_000)
    # Nothing firing: the panel as before, no strip and no badge.
    assert page.locator("#alerts").is_hidden() and page.locator("[data-alert-badge]").count() == 0
    page.evaluate("() => { window.sameDocument = true; }")

    # Trouble, for real: one box goes dark, the other holds the split-proving race, and the operator
    # turns on the idle-GPU rule (the racing box's two workers sit idle while 3 jobs wait).
    dark.stop()
    racer.freeze_step = RACE
    manage(dash.env, "setalertrule", "gpu-idle-while-queued", "--enable", "--for", "1")
    page.wait_for_selector(_item("box-dark", "source-down"), timeout=60_000)
    for p in (5, 6):
        page.wait_for_selector(f'{_item("box-race", "tracker-inconsistent")}[data-subject="{RACE_JOB}#{p}"]',
                               timeout=60_000)
    for w in (0, 1):
        page.wait_for_selector(f'{_item("box-race", "gpu-idle-while-queued")}[data-subject="W{w}"]', timeout=60_000)
    assert page.evaluate("() => window.sameDocument === true")  # it arrived live, not by a reload
    assert page.locator("#alerts").is_visible()
    # Whole labels: the job id and partition, the engine, the message, never cut.
    race_item = page.locator(f'{_item("box-race", "tracker-inconsistent")}[data-subject="{RACE_JOB}#5"]')
    assert f"box-race · {RACE_JOB}#5" in race_item.locator(".alert-where").inner_text()
    assert "3 snapshots in a row" in race_item.locator(".alert-msg").inner_text()
    assert page.evaluate(NO_SIDEWAYS_OVERFLOW)["cut"] == 0
    # Badges: each engine section, the dark source's header, the idle worker cards, the racing cells.
    for w in (0, 1):
        card = f'section.engine[data-engine-id="box-race"] article.worker[data-worker-id="{w}"]'
        assert "gpu-idle-while-queued" in page.inner_text(f"{card} header [data-alert-badge]")
    for engine in ("box-race", "box-dark"):
        assert page.locator(f'section.engine[data-engine-id="{engine}"] .engine-head [data-alert-badge]').count() >= 1
    assert page.locator('section.engine[data-engine-id="box-dark"] .engine-id.has-alert').count() == 1
    for p in (5, 6):
        cell = page.locator(f'section.engine[data-engine-id="box-race"] tr.pipeline[data-job-id="{RACE_JOB}"] '
                            f'.cell[data-index="{p}"]')
        assert "has-alert" in cell.get_attribute("class").split() and "tracker-inconsistent" in cell.get_attribute("title")
    # Badges survive the live frames that redraw the sections.
    seq = int(page.get_attribute('section.engine[data-engine-id="box-race"] .engine-body', "data-seq"))
    page.wait_for_function("(s) => +document.querySelector('section.engine[data-engine-id=\"box-race\"] "
                           ".engine-body').dataset.seq > s + 2", arg=seq, timeout=15_000)
    page.wait_for_selector('section.engine[data-engine-id="box-race"] .cell[data-index="5"].has-alert', timeout=5_000)
    # The age grows live.
    age = page.locator(f'{_item("box-dark", "source-down")} time[data-since]')
    first = age.inner_text()
    page.wait_for_function("([sel, t]) => document.querySelector(sel).textContent !== t",
                           arg=[f'{_item("box-dark", "source-down")} time[data-since]', first], timeout=5_000)

    # Acknowledge the dark box; silence one race alert for 15 minutes; a bad length is answered.
    page.click(f'{_item("box-dark", "source-down")} [data-alert-ack]')
    page.wait_for_selector(f'{_item("box-dark", "source-down")}.acked [data-alert-acked]', timeout=10_000)
    assert SERVICE_USERNAME in page.inner_text(f'{_item("box-dark", "source-down")} [data-alert-acked]')
    silenced = f'{_item("box-race", "tracker-inconsistent")}[data-subject="{RACE_JOB}#6"]'
    page.fill(f"{silenced} [data-silence-minutes]", "0")
    page.click(f"{silenced} [data-alert-silence]")
    page.wait_for_function("(sel) => document.querySelector(sel + ' [data-alert-error]').textContent.includes('1 to')",
                           arg=silenced, timeout=10_000)
    page.fill(f"{silenced} [data-silence-minutes]", "15")
    page.click(f"{silenced} [data-alert-silence]")
    page.wait_for_selector(f"{silenced}.silenced [data-alert-silenced]", timeout=10_000)
    recorded = {(a["engine"], a["subject"]): a for a in _api_alerts(dash)}
    assert recorded[("box-dark", "box-dark")]["acknowledged_by"] == SERVICE_USERNAME
    assert recorded[("box-race", f"{RACE_JOB}#6")]["silenced_by"] == SERVICE_USERNAME
    assert recorded[("box-race", f"{RACE_JOB}#6")]["silenced_until"] is not None
    assert recorded[("box-race", f"{RACE_JOB}#5")]["acknowledged_by"] is None
    page.screenshot(path=str(ARTIFACTS / "alerts-1440.png"), full_page=True)

    # A reload draws the same: acknowledged and silenced, from the server.
    page.reload()
    page.wait_for_selector("[data-conn].conn-live", timeout=15_000)
    assert page.locator(f'{_item("box-dark", "source-down")}.acked').count() == 1
    assert page.locator(f"{silenced}.silenced").count() == 1
    assert page.locator('#alerts li.alert').count() == 5

    # A phone: the strip whole, nothing sideways.
    phone = panel_login(dash.base, TOKEN, width=420, height=900)
    phone.wait_for_selector("[data-conn].conn-live", timeout=15_000)
    phone.wait_for_selector(_item("box-dark", "source-down"), timeout=10_000)
    phone.wait_for_selector('section.engine[data-engine-id="box-race"] [data-alert-badge]', timeout=10_000)
    measured = phone.evaluate(NO_SIDEWAYS_OVERFLOW)
    phone.screenshot(path=str(ARTIFACTS / "alerts-420.png"), full_page=True)
    assert measured["stripRight"] <= 0 and measured["cut"] == 0, measured
    assert measured["page"] <= 0, measured
    assert page.js_errors == [] and phone.js_errors == []
