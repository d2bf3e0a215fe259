"""A stop the way systemd does it (docs/vastmanager.service, KillMode=control-group): SIGTERM to the whole
process group of a real runprover. It drains exactly like a SIGTERM to the main process: pool children
survive the signal, held jobs finish, no error is logged, no pool is rebuilt, no retry is recorded,
it exits 0 within the unit's TimeoutStopSec, and no process of the group is left."""
from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

from tests.runprover.helpers import log_troubles, unit_stop_settings, wait_until


@pytest.mark.slow
def test_group_sigterm_drains_like_a_sigterm_to_the_engine(site):
    drain_secs, timeout_stop, kill_mode = unit_stop_settings()
    assert kill_mode == "control-group" and timeout_stop > drain_secs + 5
    site.manage("submitproof", "--kind", "porep-c2", "--count", "2", "--job-id", "group-porep")
    site.manage("submitproof", "--kind", "window-post", "--count", "2", "--job-id", "group-wp")
    proc = site.start("--engine-id", "engine-g", "--drain-secs", str(drain_secs), group=True)
    try:
        wait_until(lambda: site.done_runs("group-porep-1") >= 2, proc=proc)
        group = psutil.Process(proc.pid).children(recursive=True)
        pool_children = [c for c in group if c.ppid() != proc.pid]  # forked by the forkserver
        assert len(pool_children) >= 2, group
        held = [j for (j,) in site.query("SELECT job_id FROM gpu_engine_proofjob WHERE status = 'running'")]
        assert held
        stopped_at = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout_stop) == 0, site.log()
        drain = time.monotonic() - stopped_at
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    print(f"group SIGTERM: drained {len(held)} held job(s) in {drain:.2f} s (TimeoutStopSec {timeout_stop:.0f})")
    log = site.log()
    assert "SIGTERM: no new claims" in log and "stopped: " in log
    assert log_troubles(log) == [], log
    statuses = dict(site.query("SELECT job_id, status FROM gpu_engine_proofjob"))
    assert all(statuses[j] == "done" for j in held), statuses
    assert "running" not in statuses.values() and set(statuses.values()) <= {"done", "queued"}
    assert site.query("SELECT state, count(*) FROM gpu_engine_partitionrun GROUP BY state") == [
        ("done", sum(10 if j.startswith("group-porep") else 1 for j in statuses if statuses[j] == "done"))]
    assert site.query("SELECT max(attempts) FROM gpu_engine_proofjob")[0][0] <= 1
    gone, alive = psutil.wait_procs(group, timeout=10)
    assert not alive, [p.pid for p in alive]
