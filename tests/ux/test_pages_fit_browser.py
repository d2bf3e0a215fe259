"""Every page an operator opens first, at a laptop's 1440 px and a phone's 420 px: nothing overflows
its container horizontally, measured in the DOM (tests/ux/layout.py), with a screenshot of each in
test-artifacts/. The panel carries our engine, a cuzk source (SRS/PCE table, buffers) and an
unreachable one; its last-finished list holds a failed job with its reason and a cancelled one."""
from __future__ import annotations

import pytest

from tests.ux.conftest import ARTIFACTS, BAD_ROW, CUZK, ENGINE, GONE, USER_SNAP
from tests.ux.layout import overflow_problems, overflow_report

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = (1440, 420)


def _engine(engine: str) -> str:
    return f'#engines section.engine[data-engine-id="{engine}"]'


def _check(page, name: str, width: int) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"ux-{name}-{width}.png"), full_page=True)
    problems = overflow_problems(page)
    assert not problems, f"{name} at {width} px: {problems}"
    assert not page.js_errors, page.js_errors


@pytest.mark.parametrize("width", WIDTHS)
def test_panel_and_fleet_fit(ux_site, panel_login, width):
    page = panel_login(ux_site.base, ux_site.token, width=width, height=900)
    page.wait_for_selector("[data-conn].conn-live", timeout=15_000)
    page.wait_for_selector(f"{_engine(ENGINE)} .activity .timeline", timeout=30_000)
    page.wait_for_selector(f"{_engine(CUZK)} table.alloc-table", timeout=30_000)
    page.wait_for_selector(f"{_engine(GONE)} [data-source-state]", timeout=30_000)
    page.wait_for_selector(f'#history tr.job-row[data-job-id="{BAD_ROW}"]', timeout=60_000)
    page.wait_for_selector(f"{_engine(ENGINE)} tr.pipeline", timeout=60_000)
    _check(page, "panel", width)
    # The fleet view: the summary on top and the cuzk engine's own tables, scrolled to.
    page.locator(_engine(CUZK)).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"ux-fleet-{width}.png"))
    report = overflow_report(page)
    assert not [t for t in report["truncated"] if "lat" in t["el"]], "a latency label is cut"


@pytest.mark.parametrize("width", WIDTHS)
def test_history_page_fits(ux_site, panel_login, width):
    page = panel_login(ux_site.base, ux_site.token, width=width, height=900)
    for span in ("1h", "24h"):
        page.goto(f"{ux_site.base}/history/{ENGINE}?range={span}")
        page.wait_for_selector(".activity .charts [data-chart=throughput]")
        _check(page, f"history-{span}", width)


@pytest.mark.parametrize("width", WIDTHS)
def test_admin_job_page_fits(ux_site, panel_login, width):
    page = panel_login(ux_site.base, ux_site.token, width=width, height=900)
    # A SnapDeals job has 16 partitions: the longest runs table.
    for name, job_id in (("admin-job", USER_SNAP), ("admin-failed-job", BAD_ROW)):
        page.goto(f"{ux_site.base}/admin/gpu_engine/proofjob/?q={job_id}")
        page.locator(f'#result_list a:has-text("{job_id}")').first.click()
        page.wait_for_selector("#proofjob_form")
        _check(page, name, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_activity_page_opened_directly_fits(ux_site, panel_login, width):
    page = panel_login(ux_site.base, ux_site.token, width=width, height=900)
    page.goto(f"{ux_site.base}/panel/activity/{ENGINE}")
    page.wait_for_selector(".activity .timeline")
    _check(page, "activity", width)
