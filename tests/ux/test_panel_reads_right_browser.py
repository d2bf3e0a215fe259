"""What a newcomer misread on the panel, now read right: one colour per phase in the waterfall, the
timeline and the legends; phase sums labelled as sums; a failure's reason written out; circuit and
kind labels; the header's snapshot age instead of a sequence number; no backend invented for a cuzk
source; the queue chart's "now" is the engine's live value; an icon and a styled activity page."""
from __future__ import annotations

import re
import urllib.request

import pytest

from tests.ux.conftest import BAD_ROW, CANCELLED, CUZK, ENGINE

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SECTION = '#engines section.engine[data-engine-id="{}"]'

# The computed colour of a waterfall cell, a timeline bar and the legends' swatches of each phase.
PHASE_COLOURS = """() => {
  const probe = (cls, prop) => {
    const el = document.createElement("span");
    el.className = cls; document.body.appendChild(el);
    const v = getComputedStyle(el)[prop]; el.remove(); return v;
  };
  const bar = (cls) => {
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    const r = document.createElementNS("http://www.w3.org/2000/svg", "rect");
    r.setAttribute("class", cls); svg.appendChild(r); document.body.appendChild(svg);
    const v = getComputedStyle(r).fill; svg.remove(); return v;
  };
  const legend = (cls) => { const el = document.querySelector(".tl-legend .sw." + cls);
    return el ? getComputedStyle(el).backgroundColor : null; };
  return {
    cell_gpu: probe("cell phase-gpu", "backgroundColor"), bar_gpu: bar("tl-bar ph-gpu st-done"),
    legend_gpu: legend("ph-gpu"), fleet_gpu: probe("sw cell phase-gpu", "backgroundColor"),
    cell_fin: probe("cell phase-finalizing", "backgroundColor"), bar_fin: bar("tl-bar ph-finalize st-done"),
    legend_fin: legend("ph-finalize"), cell_synth: probe("cell phase-synthesizing", "backgroundColor"),
  };
}"""


def _rgb(css: str) -> str:
    return re.sub(r"\s+", "", css)


@pytest.fixture
def panel(ux_site, panel_login):
    page = panel_login(ux_site.base, ux_site.token, width=1440, height=1000)
    page.wait_for_selector("[data-conn].conn-live", timeout=15_000)
    page.wait_for_selector(f"{SECTION.format(ENGINE)} .activity .timeline", timeout=30_000)
    page.wait_for_selector(f"{SECTION.format(CUZK)} .engine-body", timeout=30_000)
    return page


def test_one_colour_per_phase_everywhere(panel):
    c = {k: _rgb(v) if v else v for k, v in panel.evaluate(PHASE_COLOURS).items()}
    assert c["cell_gpu"] == c["bar_gpu"] == c["legend_gpu"] == c["fleet_gpu"], c
    assert c["cell_fin"] == c["bar_fin"] == c["legend_fin"], c
    assert c["cell_synth"] != c["cell_gpu"] and c["cell_synth"] != c["cell_fin"], c


def test_phase_columns_are_labelled_as_partition_sums(panel):
    panel.wait_for_selector(f"{SECTION.format(ENGINE)} tr.pipeline", timeout=60_000)
    heads = panel.locator(f"{SECTION.format(ENGINE)} table.pipes th").all_inner_texts()
    assert [h.strip() for h in heads[-4:]] == ["elapsed", "Σ synth", "Σ gpu", "Σ finalize"]
    assert "partition" in panel.locator(f"{SECTION.format(ENGINE)} table.pipes th", has_text="Σ gpu").get_attribute(
        "title")


def test_failed_and_cancelled_jobs_read_in_the_last_finished_list(ux_site, panel):
    panel.wait_for_selector(f'#history tr.job-row[data-job-id="{BAD_ROW}"]', timeout=60_000)
    row = panel.locator(f'#history tr.job-row[data-job-id="{BAD_ROW}"]')
    assert row.locator(".badge").inner_text() == "failed"
    reason = row.locator("xpath=following-sibling::tr[1]").locator(".reason")
    api = ux_site.api(f"/api/jobs/{BAD_ROW}")
    assert reason.text_content() == api["error"] and reason.get_attribute("title") == api["error"]
    assert "cannot be proved" in api["error"] and reason.is_visible()
    assert row.locator("td.kind").inner_text() == "PoRep Commit 2 (SealCommit)"
    cancelled = panel.locator(f'#history tr.job-row[data-job-id="{CANCELLED}"] .badge')
    assert cancelled.inner_text() == "cancelled"


def test_queue_wait_and_compute_agree_with_the_api(ux_site, panel):
    row = panel.locator("#history tr.job-row.status-done").first
    job_id = row.get_attribute("data-job-id")
    api = ux_site.api(f"/api/jobs/{job_id}")
    assert api["queue_wait_secs"] >= 0 and api["compute_secs"] > 0
    assert float(row.locator("[data-queue-wait]").get_attribute("data-queue-wait")) == pytest.approx(
        api["queue_wait_secs"], abs=1e-6)
    assert float(row.locator("[data-compute]").get_attribute("data-compute")) == pytest.approx(
        api["compute_secs"], abs=1e-6)


def test_header_shows_update_age_not_a_sequence_number(panel):
    header = panel.locator(f"{SECTION.format(ENGINE)} [data-region=header]")
    assert header.locator(".seq").count() == 0 and "#" not in header.inner_text()
    age = header.locator("[data-updated-at]")
    panel.wait_for_function("(el) => /ago|just now/.test(el.textContent)", arg=age.element_handle())
    links = header.locator("a.history-link")
    assert links.inner_text().strip() == "GPU timeline & charts"
    assert panel.locator("nav a", has_text="job history").count() == 1


def test_cuzk_source_shows_no_backend_it_did_not_report(panel):
    header = panel.locator(f"{SECTION.format(CUZK)} [data-region=header]")
    assert header.locator(".tag.source-kind").inner_text() == "cuzk"
    assert header.locator(".tag.backend").count() == 0


def test_queue_chart_now_is_the_live_queue_depth(ux_site, panel):
    def agree() -> bool:
        snap = ux_site.dashboard.fleet()[ENGINE]
        shown = panel.locator(f"{SECTION.format(ENGINE)} [data-chart=queue]").get_attribute("data-now")
        return shown == str(snap["counters"]["queue_depth"])
    # The region follows the stream (refetched every 2 s at most): both move; they meet.
    for _ in range(40):
        if agree():
            break
        panel.wait_for_timeout(250)
    else:
        raise AssertionError("the queue chart's now never matched the engine's queue depth")
    line = panel.locator(f"{SECTION.format(ENGINE)} [data-chart=queue] polyline").get_attribute("points")
    assert len(line.split()) >= 2  # drawn from the first sample on


def test_fleet_rate_reads_a_dash_or_a_number(panel):
    text = panel.locator('#fleet [data-sum="ppm"]').inner_text()
    assert text == "—" or float(text) >= 0


def test_favicon_and_activity_page_opened_directly(ux_site, panel):
    with urllib.request.urlopen(f"{ux_site.base}/favicon.ico", timeout=10) as response:
        assert response.status == 200 and response.headers.get_content_type() == "image/svg+xml"
        assert response.read().startswith(b"<svg")
    panel.goto(f"{ux_site.base}/panel/activity/{ENGINE}")
    assert panel.locator("link[rel=stylesheet]").count() == 1 and panel.locator("header.topbar").count() == 1
    assert _rgb(panel.evaluate("getComputedStyle(document.body).backgroundColor")) != "rgb(255,255,255)"
