"""watchfleet and runprover's fleet wiring: refused on an unmigrated database, a taken port refused
before serving, and `runprover --no-fleet` in the help."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

from tests.fleet.dashboard import ROOT, process_env


def _manage(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT,
                          env=process_env(tmp_path / "data"), capture_output=True, text=True, timeout=120)


def test_watchfleet_needs_a_migrated_database(tmp_path) -> None:
    done = _manage(tmp_path, "watchfleet", "--bind", "127.0.0.1:0")
    assert done.returncode != 0 and "unapplied migrations" in done.stderr


def test_watchfleet_refuses_a_taken_port(tmp_path) -> None:
    assert _manage(tmp_path, "migrate", "-v0").returncode == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = _manage(tmp_path, "watchfleet", "--bind", f"127.0.0.1:{taken.getsockname()[1]}")
    assert done.returncode != 0 and "cannot listen" in done.stderr


def test_watchfleet_refuses_a_bad_bind(tmp_path) -> None:
    done = _manage(tmp_path, "watchfleet", "--bind", "nowhere")
    assert done.returncode != 0 and "HOST:PORT" in done.stderr


def test_runprover_can_leave_the_fleet_alone(tmp_path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "runprover", "--help"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert "--no-fleet" in done.stdout
