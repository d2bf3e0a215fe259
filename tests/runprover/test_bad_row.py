"""The failure of the issue, end to end: a job row with an empty kind and id (what the admin once
stored) sits in the queue. runprover fails that job with the reason and keeps proving; it used to
crash its feeder, exit 0, and crash again on every restart."""
from __future__ import annotations

import signal

import pytest

from tests.runprover.helpers import wait_until


@pytest.mark.slow
def test_runprover_fails_the_bad_row_and_keeps_proving(site):
    site.execute("INSERT INTO gpu_engine_proofjob (job_id, proof_kind, priority, status, total_partitions, "
               "submitted_at, claimed_by, attempts, error, verified, timings, vk_fingerprint) "
               "VALUES ('', '', 999, 'queued', 1, datetime('now'), '', 0, '', 0, '{}', '')")
    site.manage("submitproof", "--kind", "window-post", "--job-id", "after-bad-row")
    proc = site.start("--engine-id", "engine-bad-row")
    try:
        wait_until(lambda: site.status("after-bad-row") == "done", proc=proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, site.log()
    status, error = site.query("SELECT status, error FROM gpu_engine_proofjob WHERE job_id = ''")[0]
    assert status == "failed"
    assert error.startswith("cannot be proved: proof_kind must not be empty; valid kinds: porep-c2")
    assert "stopped: 1 proved, 1 failed" in site.log()
