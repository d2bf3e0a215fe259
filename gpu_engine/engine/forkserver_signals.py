"""Imported first by the engine's forkserver (pools.py puts it at the head of the preload list):
makes that process ignore SIGTERM, so a stop signalled to the whole process group (systemd's
KillMode=control-group) does not kill it. The forkserver's death would break every pool: each
child's sentinel is its connection to the forkserver, so the executors would see all their
children as "terminated abruptly". The children it forks inherit the SIG_IGN until `child_init`
hands SIGTERM to the thread that obeys only the engine (pools.py).

The import acts only inside a forkserver (a process started as `python -c` that runs the
multiprocessing forkserver), so importing it anywhere else changes nothing.
"""
from __future__ import annotations

import signal
import sys


def _in_forkserver() -> bool:
    return sys.argv[:1] == ["-c"] and "multiprocessing.forkserver" in sys.modules


if _in_forkserver():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
