"""SIGTERM: stop claiming, finish (or return) held jobs, exit 0; a second signal exits at once."""
from __future__ import annotations

import signal
import time

import pytest

from tests.runprover.helpers import Site, wait_until


def running_job(site: Site) -> str:
    rows = site.query("SELECT job_id FROM gpu_engine_proofjob WHERE status = 'running'")
    return rows[0][0] if rows else ""


@pytest.mark.slow
def test_sigterm_finishes_held_job_and_claims_no_more(site):
    site.manage("submitproof", "--kind", "snap-update", "--count", "3", "--job-id", "term")
    proc = site.start("--engine-id", "engine-t", "--workers", "1")
    wait_until(lambda: site.done_runs("term-1") >= 1, proc=proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(90) == 0, site.log()
    statuses = dict(site.query("SELECT job_id, status FROM gpu_engine_proofjob"))
    assert statuses["term-1"] == "done"
    assert "running" not in statuses.values()
    assert list(statuses.values()).count("queued") >= 1
    log = site.log()
    assert "SIGTERM: no new claims" in log and "stopped: " in log


@pytest.mark.slow
def test_sigterm_with_no_drain_returns_held_job_to_queue(site):
    site.manage("submitproof", "--kind", "porep-c2", "--job-id", "returned")
    proc = site.start("--engine-id", "engine-r", "--drain-secs", "0")
    wait_until(lambda: site.done_runs("returned") >= 1, proc=proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0, site.log()
    status, attempts, claimed_by = site.query(
        "SELECT status, attempts, claimed_by FROM gpu_engine_proofjob WHERE job_id = 'returned'")[0]
    assert (status, attempts, claimed_by) == ("queued", 0, "")


@pytest.mark.slow
def test_second_signal_exits_at_once(site):
    site.manage("submitproof", "--kind", "snap-update", "--count", "4", "--job-id", "twice")
    proc = site.start("--engine-id", "engine-2", "--drain-secs", "60")
    wait_until(lambda: bool(running_job(site)), proc=proc)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(10)
    assert code == 128 + signal.SIGTERM
    assert time.monotonic() - started < 5
    assert "second signal" in site.log()
