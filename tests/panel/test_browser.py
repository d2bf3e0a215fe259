"""A real browser against a live `runprover --demo --backend cpu`: the panel shows a worker proving a
SnapDeals job with its full id while that partition is on the GPU, updates without a reload, and
shows stale once the server is gone. Screenshots go to test-artifacts/."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.process_support import free_port, stop_now, wait_http

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
TOKEN = "browser-test-token"

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# A worker card in `proving` whose full job id is a SnapDeals one, and whose partition's waterfall
# cell in that job's pipeline row is in `gpu`: the state the cuzk panel got wrong.
PROVING_SNAP_IN_GPU = """() => {
  for (const card of document.querySelectorAll('article.worker[data-state="proving"]')) {
    const id = card.dataset.jobId, p = card.dataset.partition;
    if (!/^ps-snap-\\d+-\\d+-\\d+$/.test(id)) continue;
    const shown = card.querySelector('.job-id');
    if (!shown || shown.textContent.trim() !== id || shown.title !== id) continue;
    const row = document.querySelector('tr.pipeline[data-job-id="' + CSS.escape(id) + '"]');
    const cell = row && row.querySelector('.cell[data-index="' + p + '"]');
    if (cell && cell.dataset.state === 'gpu') return id;
  }
  return null;
}"""


@pytest.fixture
def prover(tmp_path):
    port = free_port()
    env = dict(os.environ, VASTMANAGER_DATA_DIR=str(tmp_path / "data"), VASTMANAGER_TOKEN=TOKEN,
               VASTMANAGER_PARAMS_DIR=str(ROOT / "data" / "params"), LOG_LEVEL="WARNING", PYTHONUNBUFFERED="1")
    for var in ("DATABASE_URL", "REDIS_URL"):
        env.pop(var, None)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run(manage + ["migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True, timeout=120)
    log = open(tmp_path / "runprover.log", "w")
    proc = subprocess.Popen(manage + ["runprover", "--demo", "--backend", "cpu", "--bind", f"127.0.0.1:{port}"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/healthz", proc, timeout=180)
        yield base, proc
    except Exception:
        print((tmp_path / "runprover.log").read_text()[-4000:])
        raise
    finally:
        if proc.poll() is None:
            stop_now(proc)
        log.close()


def test_live_panel_in_chromium(prover, panel_login):
    base, proc = prover
    ARTIFACTS.mkdir(exist_ok=True)
    page = panel_login(base, TOKEN)
    page.wait_for_selector("[data-conn].conn-live", timeout=15_000)
    page.evaluate("window.__noReload = true")

    # The view moves without a reload: the engine's snapshot seq advances under our marker.
    page.wait_for_selector("#engines .engine-body[data-seq]", timeout=30_000)
    first_seq = int(page.get_attribute("#engines .engine-body", "data-seq"))
    page.wait_for_function(f"() => +document.querySelector('#engines .engine-body').dataset.seq > {first_seq}",
                           timeout=15_000)

    job_id = page.wait_for_function(PROVING_SNAP_IN_GPU, timeout=120_000, polling=50).json_value()
    page.screenshot(path=str(ARTIFACTS / "panel-proving.png"), full_page=True)
    assert job_id.startswith("ps-snap-") and len(job_id) > len("ps-snap-")
    assert page.locator(f'article.worker[data-job-id="{job_id}"] .job-id').first.inner_text().strip() in (
        job_id, "—")  # the card may have moved on since; the check above saw it whole
    # Finished jobs reach the history table (refetched when the counters move), linked to the admin.
    page.wait_for_selector("#history tr.job-row", timeout=120_000)
    link = page.locator("#history tr.job-row a.job-id").first
    assert link.inner_text().strip() == link.get_attribute("title")
    assert "/admin/gpu_engine/proofjob/" in link.get_attribute("href")
    assert page.evaluate("window.__noReload") is True
    assert page.js_errors == []

    # On a 420 px screen each pipeline is a card of labelled cells (no sideways scrolling): no two
    # cells' drawn text overlaps, and every cell is inside the screen.
    narrow = panel_login(base, TOKEN, width=420, height=900)
    narrow.wait_for_selector("#engines table.pipes tr.pipeline", timeout=30_000)
    # Where each cell's content is drawn (its label included), not its box.
    boxes = narrow.eval_on_selector("#engines table.pipes tr.pipeline", """tr => Array.from(tr.children).map(td => {
        const range = document.createRange(); range.selectNodeContents(td);
        const r = range.getBoundingClientRect(), c = td.getBoundingClientRect();
        return [Math.min(r.left, c.left), c.top, r.right, c.bottom]; })""")
    assert len(boxes) == 7
    for i, (l1, t1, r1, b1) in enumerate(boxes):
        assert 0 <= l1 and r1 <= 420, boxes
        for l2, t2, r2, b2 in boxes[i + 1:]:
            assert r1 <= l2 or r2 <= l1 or b1 <= t2 or b2 <= t1, boxes
    assert narrow.evaluate("document.documentElement.scrollWidth") <= 420
    narrow.screenshot(path=str(ARTIFACTS / "panel-420.png"), full_page=True)
    narrow.context.close()

    # Whole on first paint without JavaScript: the same regions, server-rendered.
    nojs = panel_login(base, TOKEN, javascript=False)
    assert nojs.locator("#engines .engine [data-region=workers] article.worker").count() >= 1
    assert nojs.locator("#engines .engine [data-region=pipelines]").count() == 1
    assert nojs.inner_text("[data-conn]") == "static"
    nojs.context.close()

    # The server goes away (a second SIGTERM makes runprover exit at once rather than drain):
    # the panel says stale, and since when.
    stop_now(proc)
    page.wait_for_selector("#engines .engine.stale", timeout=20_000)
    liveness = page.inner_text("#engines .engine.stale [data-liveness]")
    assert liveness.startswith("stale since"), liveness
    assert "disconnected since" in page.inner_text("[data-conn]")
    page.screenshot(path=str(ARTIFACTS / "panel-stale.png"), full_page=True)
