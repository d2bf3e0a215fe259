"""Running real `manage.py` processes against a throwaway data directory (own SQLite file)."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.credentials import TOKEN

ROOT = Path(__file__).resolve().parents[2]


class Site:
    def __init__(self, data_dir: Path, params_dir: Path, **env: str) -> None:
        self.data_dir, self.params_dir = data_dir, params_dir
        self.env = {**os.environ, "VASTMANAGER_DATA_DIR": str(data_dir), "VASTMANAGER_PARAMS_DIR": str(params_dir),
                    "DATABASE_URL": f"sqlite:///{data_dir / 'db.sqlite3'}", "VASTMANAGER_TOKEN": TOKEN,
                    "JOB_LEASE_SECS": "2", "HEARTBEAT_SECS": "0.5", "PYTHONUNBUFFERED": "1", **env}
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        self.manage("migrate", "-v0")

    def manage(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=True)

    def start(self, *args: str, log_name: str = "runprover.log", group: bool = False,
              append: bool = False) -> subprocess.Popen:
        """runprover --no-serve on the CPU; `group`: in a process group (session) of its own, as a
        service manager runs it, so the test can signal the whole group."""
        log = open(self.data_dir / log_name, "a" if append else "w")
        return subprocess.Popen([sys.executable, "manage.py", "runprover", "--no-serve", "--backend", "cpu",
                                 "--synth-workers", "1", *args],
                                cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, text=True,
                                start_new_session=group)

    def log(self, log_name: str = "runprover.log") -> str:
        return (self.data_dir / log_name).read_text()

    def query(self, sql: str, *params) -> list[tuple]:
        conn = sqlite3.connect(self.data_dir / "db.sqlite3", timeout=20)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def execute(self, sql: str, *params) -> None:
        """A write straight into the site's database, around every entry point (as an operator's SQL would)."""
        conn = sqlite3.connect(self.data_dir / "db.sqlite3", timeout=20)
        try:
            with conn:
                conn.execute(sql, params)
        finally:
            conn.close()

    def status(self, job_id: str) -> str | None:
        rows = self.query("SELECT status FROM gpu_engine_proofjob WHERE job_id = ?", job_id)
        return rows[0][0] if rows else None

    def done_runs(self, job_id: str) -> int:
        return self.query("SELECT count(*) FROM gpu_engine_partitionrun r JOIN gpu_engine_proofjob j "
                          "ON r.job_id = j.id WHERE j.job_id = ? AND r.state = 'done'", job_id)[0][0]


def wait_until(predicate, timeout: float = 90.0, interval: float = 0.1, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"process exited early with {proc.returncode}")
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def unit_stop_settings(unit: Path = ROOT / "docs" / "vastmanager.service") -> tuple[float, float, str]:
    """(--drain-secs of ExecStart, TimeoutStopSec, KillMode) of the shipped systemd unit."""
    values: dict[str, str] = {}
    for line in unit.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            values[key.strip()] = value.strip()
    args = values["ExecStart"].split()
    drain = float(args[args.index("--drain-secs") + 1])
    return drain, float(values["TimeoutStopSec"]), values.get("KillMode", "control-group")


def log_troubles(text: str) -> list[str]:
    """Lines of a runprover log that speak of a failure: errors, tracebacks, dead or rebuilt pools."""
    words = ("ERROR", "CRITICAL", "Traceback", "died", "starting a new", "WARNING")
    return [line for line in text.splitlines() if any(w in line for w in words)]
