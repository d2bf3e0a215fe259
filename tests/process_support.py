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
