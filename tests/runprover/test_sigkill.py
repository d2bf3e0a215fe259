"""An engine killed with SIGKILL mid-proof: after its lease expires another engine proves the job,
and every job ends with exactly one verified bundle."""
from __future__ import annotations

import json
import signal

import pytest

from gpu_engine.groth16.api import load_params, verify_bundle
from tests.runprover.helpers import wait_until


@pytest.mark.slow
def test_job_of_killed_engine_is_proved_by_the_next(site):
    site.manage("submitproof", "--kind", "porep-c2", "--job-id", "killed-porep")
    site.manage("submitproof", "--kind", "window-post", "--job-id", "killed-wd")
    first = site.start("--engine-id", "engine-a", log_name="a.log")
    try:
        wait_until(lambda: site.status("killed-porep") == "running" and site.done_runs("killed-porep") >= 1, proc=first)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    assert site.status("killed-porep") == "running"  # mid-proof: the dead engine still holds the lease
    assert site.done_runs("killed-porep") < 10
    second = site.start("--engine-id", "engine-b", log_name="b.log")
    try:
        wait_until(lambda: site.status("killed-porep") not in ("queued", "running")
                   and site.status("killed-wd") not in ("queued", "running"), proc=second)
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(60) == 0, site.log("b.log")
    rows = site.query("SELECT job_id, status, claimed_by, attempts, bundle FROM gpu_engine_proofjob ORDER BY job_id")
    assert len(rows) == 2
    for _job_id, status, _claimed_by, _attempts, bundle in rows:
        assert status == "done", site.log("b.log")
        assert bundle is not None
        bundle = json.loads(bundle)
        results = verify_bundle(bundle, load_params(bundle["proof_kind"], site.params_dir).vk)
        assert results and all(ok for _, ok in results)
    porep = {r[0]: r for r in rows}["killed-porep"]
    assert porep[2] == "engine-b" and porep[3] == 2
    engines = dict(site.query("SELECT r.engine_id, count(*) FROM gpu_engine_partitionrun r JOIN gpu_engine_proofjob j "
                              "ON r.job_id = j.id WHERE j.job_id = 'killed-porep' AND r.state = 'done' "
                              "GROUP BY r.engine_id"))
    assert engines["engine-b"] == 10 and 1 <= engines.get("engine-a", 0) < 10
    # The two claims' rows are told apart by their attempt number.
    attempts = dict(site.query("SELECT r.engine_id, group_concat(DISTINCT r.attempt) FROM gpu_engine_partitionrun r "
                               "JOIN gpu_engine_proofjob j ON r.job_id = j.id WHERE j.job_id = 'killed-porep' "
                               "GROUP BY r.engine_id"))
    assert attempts == {"engine-a": "1", "engine-b": "2"}
