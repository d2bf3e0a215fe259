"""Starting and stopping real server processes, shared by the browser test and the web benchmarks."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 180) -> None:
    """Wait until `url` answers 200, failing early when the server process has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"{url} not up after {timeout}s")


def stop_now(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Stop a server started with start_new_session=True, at once.

    runprover drains on the first SIGTERM and exits at once on the second; SIGKILL is the last resort.
    """
    for _ in range(2):
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            time.sleep(0.3)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


class ServedSite:
    """A throwaway site (own data directory and SQLite file, migrated) and one server process of it.

    `start("servepanel")` serves the panel alone; `start("runprover", "--demo", ...)` the embedded
    engine and panel. The server is the real one (vastmanager.server) on a free loopback port."""

    def __init__(self, data_dir, token: str, root=None, **env: str) -> None:
        import sys
        from pathlib import Path

        self.root = Path(root) if root is not None else Path(__file__).resolve().parents[1]
        self.python = sys.executable
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.token = token
        self.env = {**os.environ, "VASTMANAGER_DATA_DIR": str(self.data_dir), "VASTMANAGER_TOKEN": token,
                    "DATABASE_URL": f"sqlite:///{self.data_dir / 'db.sqlite3'}", "LOG_LEVEL": "INFO",
                    "PYTHONUNBUFFERED": "1", **env}
        for var in ("DJANGO_SETTINGS_MODULE", "REDIS_URL"):
            self.env.pop(var, None)
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.log_path = self.data_dir / "server.log"
        subprocess.run([self.python, "manage.py", "migrate", "--noinput", "-v0"], cwd=self.root, env=self.env,
                       check=True, timeout=300)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, command: str, *args: str, timeout: float = 180) -> subprocess.Popen:
        self.port = free_port()
        log = open(self.log_path, "w")
        self.proc = subprocess.Popen([self.python, "manage.py", command, "--bind", f"127.0.0.1:{self.port}", *args],
                                     cwd=self.root, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        log.close()
        try:
            wait_http(f"{self.base}/healthz", self.proc, timeout=timeout)
        except Exception:  # noqa: BLE001 - whatever kept it down, it is stopped and its log shown
            self.stop()
            raise AssertionError(f"server did not come up:\n{self.log()[-3000:]}") from None
        return self.proc

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def manage(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([self.python, "manage.py", *args], cwd=self.root, env=self.env, check=True,
                              timeout=timeout, capture_output=True, text=True)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop_now(self.proc)
