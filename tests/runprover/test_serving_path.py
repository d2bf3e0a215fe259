"""The three serving commands share one serving path: each refuses an unmigrated database and a taken
port before it serves, with the same messages, and prints the same panel lines."""
from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fleet.dashboard import ROOT, manage, process_env
from vastmanager import serving

COMMANDS = [("runprover", "--backend", "cpu"), ("servepanel",), ("watchfleet",)]


def _run(env: dict[str, str], command: tuple[str, ...], bind: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *command, "--bind", bind], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> dict[str, str]:
    env = process_env(tmp_path_factory.mktemp("serving") / "data")
    manage(env, "migrate", "--noinput", "-v0")
    return env


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_every_serving_command_refuses_an_unmigrated_database(tmp_path: Path, command) -> None:
    done = _run(process_env(tmp_path / "data"), command, "127.0.0.1:0")
    assert done.returncode == 1
    assert "the database has unapplied migrations; run `manage.py migrate` first" in done.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_every_serving_command_refuses_a_taken_port_before_serving(migrated, command) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run(migrated, command, f"127.0.0.1:{port}")
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "panel " not in done.stdout  # refused before the banner


def test_the_base_url_brackets_an_ipv6_host() -> None:
    assert serving.base_url("127.0.0.1", 8000) == "http://127.0.0.1:8000"
    assert serving.base_url("::1", 8000) == "http://[::1]:8000"


def test_the_panel_lines_name_the_panel_the_login_and_the_api() -> None:
    lines = serving.panel_lines("http://[::1]:8000")
    assert lines[0] == "  panel      http://[::1]:8000/"
    assert any(line.startswith("  login      http://[::1]:8000/login?token=") for line in lines)
    assert lines[-1].startswith("  API        http://[::1]:8000/api/jobs")
