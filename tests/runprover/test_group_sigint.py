"""Ctrl-C in a terminal signals the whole process group, pool children included: the children
must not die of it (the engine drains through them), and none outlives an engine killed outright."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest

from tests.runprover.helpers import ROOT, Site, wait_until


def start_in_own_group(site: Site, *args: str) -> subprocess.Popen:
    log = open(site.data_dir / "runprover.log", "w")
    return subprocess.Popen([sys.executable, "manage.py", "runprover", "--no-serve", "--backend", "cpu",
                             "--synth-workers", "1", *args], cwd=ROOT, env=site.env, stdout=log,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


@pytest.mark.slow
def test_group_sigint_drains_the_held_job_through_the_pool(site):
    site.manage("submitproof", "--kind", "porep-c2", "--job-id", "ctrl-c")
    proc = start_in_own_group(site, "--engine-id", "engine-c")
    try:
        wait_until(lambda: site.done_runs("ctrl-c") >= 1, proc=proc)
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(90) == 0, site.log()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    assert site.status("ctrl-c") == "done", site.log()
    failed = site.query("SELECT count(*) FROM gpu_engine_partitionrun WHERE state != 'done'")[0][0]
    assert failed == 0, site.log()


@pytest.mark.slow
def test_pool_children_exit_with_a_killed_engine(site):
    site.manage("submitproof", "--kind", "porep-c2", "--job-id", "orphans")
    proc = start_in_own_group(site, "--engine-id", "engine-k")
    try:
        wait_until(lambda: site.done_runs("orphans") >= 1, proc=proc)
        children = psutil.Process(proc.pid).children(recursive=True)
        workers = [c for c in children if c.ppid() != proc.pid]  # forked by the forkserver
        assert workers
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    try:
        gone, alive = psutil.wait_procs(workers, timeout=10)
        assert not alive, [p.pid for p in alive]
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of this test's own group
        except ProcessLookupError:
            pass
