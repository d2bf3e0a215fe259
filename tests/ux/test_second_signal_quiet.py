"""Ctrl-C twice (both to the whole process group, as a terminal sends them): the engine exits at once
and multiprocessing's resource tracker, which outlives it for a moment, finds no semaphore left to
clean up: no "leaked semaphore objects" warning (the engine unlinked its own before exiting)."""
from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

from tests.runprover.helpers import Site, wait_until

pytestmark = pytest.mark.slow


def test_second_ctrl_c_leaves_no_leaked_semaphore_warning(tmp_path, params_dir):
    site = Site(tmp_path, params_dir)
    site.manage("submitproof", "--kind", "snap-update", "--count", "3", "--job-id", "twice")
    proc = site.start("--engine-id", "engine-ctrl-c", "--drain-secs", "60", group=True)
    try:
        wait_until(lambda: site.done_runs("twice-1") >= 1, proc=proc)
        helpers = [p for p in psutil.Process(proc.pid).children(recursive=True)
                   if "resource_tracker" in " ".join(p.cmdline())]
        assert helpers, "the engine's pools run with multiprocessing's resource tracker"
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(10) == 128 + signal.SIGINT, site.log()
        _, alive = psutil.wait_procs(helpers, timeout=15)  # the tracker cleans up once the engine is gone
        assert not alive
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    log = site.log()
    assert "second signal: exiting now" in log
    assert "leaked semaphore" not in log and "resource_tracker" not in log, log[-3000:]
