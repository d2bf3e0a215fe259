"""Pool children and their forkserver are deaf to signals sent by anyone but the engine (a group
SIGTERM from systemd, a Ctrl-C's SIGINT): the pool keeps working without a rebuild. A SIGTERM from
the engine itself (the executor's terminate of a broken pool) still ends a child."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil

from gpu_engine.engine.pools import ProcessPool


def child_pid() -> int:
    return os.getpid()


def forkserver_pid() -> int:
    from multiprocessing import forkserver

    return forkserver._forkserver._forkserver_pid


def test_signals_from_others_are_ignored_and_the_engines_sigterm_obeyed():
    pool = ProcessPool("signals", 1)
    pool.start()
    try:
        child = pool.call(child_pid)
        server = forkserver_pid()
        for sig in ("TERM", "INT"):  # sent by another process, as a group signal is
            subprocess.run(["kill", f"-{sig}", str(child), str(server)], check=True)
        time.sleep(0.5)
        assert psutil.pid_exists(server) and psutil.Process(server).status() != psutil.STATUS_ZOMBIE
        assert pool.call(child_pid) == child and pool.rebuilds == 0
        os.kill(child, signal.SIGTERM)  # from the engine's own pid
        psutil.Process(child).wait(10)
    finally:
        pool.shutdown()
