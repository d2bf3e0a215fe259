"""Chromium against a live `runprover --demo`: the timeline and the charts render on the panel,
tooltips carry whole job ids, and nothing overflows at 420 px or 1,920 px. Screenshots go to
test-artifacts/."""
from __future__ import annotations

import pytest

from tests.panel.test_browser import ARTIFACTS, TOKEN, prover  # noqa: F401 - the fixture

pytestmark = [pytest.mark.browser, pytest.mark.slow]

OVERFLOW = """() => {
  const w = document.documentElement.clientWidth;
  const wide = Array.from(document.querySelectorAll('.activity, .activity *')).filter(el => {
    const r = el.getBoundingClientRect(); return r.width > 0 && r.right > w + 1; });
  return {scroll: document.documentElement.scrollWidth - w, wide: wide.map(el => el.className.baseVal ?? el.className).slice(0, 5)};
}"""


def test_timeline_and_charts_render_live(prover, panel_login):  # noqa: F811 - the imported fixture
    base, _ = prover
    ARTIFACTS.mkdir(exist_ok=True)
    page = panel_login(base, TOKEN, width=1920, height=1200)
    page.wait_for_selector("[data-conn].conn-live", timeout=15_000)
    # Bars arrive live (the region is refetched as frames come in), stored ones among them.
    page.wait_for_function("() => document.querySelectorAll('.activity rect.tl-bar.st-done').length >= 3",
                           timeout=180_000, polling=500)
    bars = page.eval_on_selector_all(".activity rect.tl-bar", "els => els.map(e => [e.dataset.jobId, "
                                     "e.querySelector('title').textContent.split('\\n')[0]])")
    assert bars and all(job and job == title for job, title in bars)
    assert page.locator(".activity [data-chart=throughput]").count() == 1
    assert page.locator(".activity [data-chart^=latency]").count() == 2
    assert page.locator(".activity .tl-lane.lane-worker").count() >= 1
    for width in (1920, 420):
        page.set_viewport_size({"width": width, "height": 1200})
        page.wait_for_timeout(300)
        result = page.evaluate(OVERFLOW)
        assert result["scroll"] <= 0 and not result["wide"], (width, result)
        page.screenshot(path=str(ARTIFACTS / f"timeline-{width}.png"), full_page=True)
    engine = page.get_attribute("#engines section.engine", "data-engine-id")
    page.set_viewport_size({"width": 1400, "height": 1200})
    page.goto(f"{base}/history/{engine}?range=24h")
    assert page.locator(".history-page rect.tl-bar").count() >= 3
    page.screenshot(path=str(ARTIFACTS / "history-page.png"), full_page=True)
    assert page.js_errors == []
