"""The README's examples run as written against a server on a port other than 8000: every line of
its "Using it" block, with only the `BASE=` line's address changed (the one line it says to change),
from a directory laid out like the repository root (`data/`, `.venv`, `manage.py`). And `make run
BIND=...` hands the address to runprover."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.process_support import free_port, stop_now, wait_http

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def using_it_commands(text: str) -> list[str]:
    """The shell commands of the first ```sh block under "## Using it", continuation lines joined,
    comment lines dropped."""
    section = text[text.index("## Using it"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    commands, current = [], ""
    for line in block.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            commands.append(current.strip())
            current = ""
    return commands


def test_readme_block_uses_one_base_url():
    commands = using_it_commands(README.read_text())
    base_lines = [c for c in commands if c.startswith("BASE=")]
    assert len(base_lines) == 1 and commands[0].startswith("BASE=")
    others = [c for c in commands if not c.startswith("BASE=")]
    assert not [c for c in others if re.search(r"(127\.0\.0\.1|localhost):\d+", c)], "an address outside BASE"
    assert all("$BASE/" in c for c in others if c.startswith("curl"))
    assert "make run BIND=" in README.read_text()


def test_make_run_passes_bind_to_runprover():
    done = subprocess.run(["make", "-n", "run", "BIND=127.0.0.1:18080"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "runprover --demo --bind 127.0.0.1:18080" in done.stdout


def _job(base: str, token: str, job_id: str) -> dict:
    request = urllib.request.Request(f"{base}/api/jobs/{job_id}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


@pytest.mark.slow
def test_readme_examples_run_as_written_on_another_port(tmp_path, params_dir):
    commands = using_it_commands(README.read_text())
    port = free_port()
    assert port != 8000
    base = f"http://127.0.0.1:{port}"
    op = tmp_path / "checkout"  # the repository root as the README's reader has it
    (op / "data").mkdir(parents=True)
    for name in (".venv", "manage.py"):
        (op / name).symlink_to(ROOT / name)
    env = dict(os.environ, VASTMANAGER_DATA_DIR=str(op / "data"), VASTMANAGER_PARAMS_DIR=str(params_dir),
               LOG_LEVEL="WARNING", PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT))
    for var in ("DATABASE_URL", "REDIS_URL", "VASTMANAGER_TOKEN", "VASTMANAGER_STATUS_TOKEN", "DJANGO_SETTINGS_MODULE"):
        env.pop(var, None)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True,
                   timeout=300)
    log = (tmp_path / "runprover.log").open("w")
    server = subprocess.Popen([sys.executable, "manage.py", "runprover", "--demo", "--backend", "cpu", "--bind",
                               f"127.0.0.1:{port}"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        wait_http(f"{base}/healthz", server, timeout=180)
        token = (op / "data" / "api_token").read_text().strip()
        outputs = []
        for command in commands:
            if command.startswith("BASE="):
                command = f"BASE={base}"  # the one line the README says to change
            if "/proof" in command:  # "once its status is done"
                deadline = time.monotonic() + 240
                while _job(base, token, "ps-snap-1000-42-7")["status"] != "done":
                    assert time.monotonic() < deadline, "the README's job never finished"
                    time.sleep(0.5)
            script = "set -euo pipefail\n" + "\n".join(c for c in commands if c.startswith(("BASE=", "TOKEN=")))
            script = script.replace(commands[0], f"BASE={base}") + "\n" + command
            done = subprocess.run(["bash", "-c", script], cwd=op, env=env, capture_output=True, text=True,
                                  timeout=300)
            assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
            outputs.append((command, done.stdout))
        for command, out in outputs:
            if command.startswith("curl") and ">" not in command:
                body = json.loads(out)
                assert isinstance(body, dict) and body.get("error") is None, (command, body)
        detail = next(json.loads(o) for c, o in outputs if '/api/jobs/ps-snap-1000-42-7"' in c)
        assert {"queue_wait_secs", "compute_secs", "partition_runs"} <= set(detail)
        done = _job(base, token, "ps-snap-1000-42-7")
        assert done["queue_wait_secs"] >= 0 and done["compute_secs"] > 0
        assert json.loads((op / "proof.json").read_text())["job_id"] == "ps-snap-1000-42-7"
        assert (op / "winpost.json").exists() and (op / "porep.key.json").exists()
    finally:
        stop_now(server)
        log.close()
