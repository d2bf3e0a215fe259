"""A scale-out cluster of real processes for the end-to-end test: a private PostgreSQL database and
Redis key prefix, `runprover --no-serve` GPU hosts, a `servepanel` dashboard, and clients of its HTTP API
and WebSocket that speak to it exactly as a browser or a script would."""
from __future__ import annotations

import asyncio
import http.cookiejar
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from tests.process_support import free_port, stop_now, wait_http
from tests.services import REDIS_URL
from tests.services import private_database as pg_private_database

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def private_database() -> Iterator[str]:
    with pg_private_database("vm_scaleout") as url:
        yield url


class Cluster:
    """The processes of one scale-out deployment on this machine; each has its own data directory."""

    def __init__(self, base: Path, database_url: str, redis_prefix: str, params_dir: Path, token: str,
                 **env: str) -> None:
        self.base, self.token = base, token
        self.env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": REDIS_URL,
                    "REDIS_PREFIX": redis_prefix, "VASTMANAGER_PARAMS_DIR": str(params_dir),
                    "VASTMANAGER_TOKEN": token, "LOG_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1", **env}
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        self.procs: dict[str, subprocess.Popen] = {}
        self.stopped: set[str] = set()
        self.port = 0

    def _env(self, name: str) -> dict[str, str]:
        data_dir = self.base / name
        data_dir.mkdir(parents=True, exist_ok=True)
        return {**self.env, "VASTMANAGER_DATA_DIR": str(data_dir)}

    def migrate(self) -> None:
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT,
                       env=self._env("migrate"), check=True, timeout=300)

    def _start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.base / f"{name}.log", "w")
        proc = subprocess.Popen(argv, cwd=ROOT, env=self._env(name), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        log.close()  # the child holds its own descriptor
        self.procs[name] = proc
        return proc

    def start_engine(self, engine_id: str) -> subprocess.Popen:
        return self._start(engine_id, [sys.executable, "manage.py", "runprover", "--no-serve", "--backend", "cpu",
                                       "--engine-id", engine_id, "--synth-workers", "1", "--drain-secs", "20"])

    def start_dashboard(self) -> subprocess.Popen:
        self.port = free_port()
        # The dashboard host's command: the guarded server (body limits, WebSocket back-pressure).
        proc = self._start("dashboard", [sys.executable, "manage.py", "servepanel", "--bind",
                                         f"127.0.0.1:{self.port}"])
        wait_http(f"{self.base_url}/healthz", proc, timeout=180)
        return proc

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/status/?token={self.token}&format=json"

    def terminate(self, name: str, timeout: float = 120) -> int:
        """One SIGTERM (a graceful drain, as an operator's stop would be) and wait for the exit."""
        proc = self.procs[name]
        self.stopped.add(name)
        os.killpg(proc.pid, signal.SIGTERM)
        return proc.wait(timeout)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                stop_now(proc)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} (tail)\n{p.read_text()[-3000:]}" for p in sorted(self.base.glob("*.log")))

    def check_alive(self) -> None:
        for name, proc in self.procs.items():
            if name not in self.stopped and proc.poll() is not None:
                raise AssertionError(f"{name} exited early with {proc.returncode}")

    # -- the dashboard's HTTP API ------------------------------------------------------------------
    def api(self, method: str, path: str, body: dict | None = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base_url}{path}", data=data, method=method,
                                         headers={"Authorization": f"Bearer {self.token}",
                                                  "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def panel_html(self) -> str:
        """The panel page as a logged-in browser gets it (token login, then the session cookie)."""
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with opener.open(f"{self.base_url}/login?token={self.token}", timeout=60) as response:
            assert response.status == 200 and response.url.rstrip("/") == self.base_url, response.url
            return response.read().decode()


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, check: Callable[[], None] | None = None,
               interval: float = 0.2) -> Any:
    """Poll until `predicate` returns something truthy (and return it); `check` fails fast."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if check is not None:
            check()
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


class FrameStream:
    """A WebSocket client on its own thread and loop that keeps every frame the dashboard sends."""

    def __init__(self, url: str, origin: str) -> None:
        self.url, self.origin = url, origin
        self.frames: list[dict[str, Any]] = []
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), name="ws-stream", daemon=True)

    def __enter__(self) -> FrameStream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    async def _main(self) -> None:
        from websockets.asyncio.client import connect

        try:
            async with connect(self.url, origin=self.origin, open_timeout=60, max_size=None) as ws:
                while not self._stop.is_set():
                    try:
                        raw = await asyncio.wait_for(ws.recv(), 0.25)  # recv is cancellation-safe
                    except TimeoutError:
                        continue
                    with self._lock:
                        self.frames.append(json.loads(raw))
        except BaseException as exc:  # noqa: BLE001 - surfaced to the test by snapshots()
            self.error = exc

    def snapshots(self) -> list[dict[str, Any]]:
        if self.error is not None:
            raise AssertionError(f"WebSocket client failed: {self.error!r}")
        with self._lock:
            return [f for f in self.frames if f.get("type") == "snapshot"]


def connect_snapshots(url: str, origin: str, timeout: float = 60) -> list[dict[str, Any]]:
    """Connect afresh and return the snapshot frames sent before the answer to a ping: the consumer
    sends the latest snapshot of every live engine on connect, before it reads the ping."""
    from websockets.asyncio.client import connect

    async def probe() -> list[dict[str, Any]]:
        async with connect(url, origin=origin, open_timeout=timeout, max_size=None) as ws:
            await ws.send(json.dumps({"type": "ping"}))
            frames = []
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), timeout))
                if frame.get("type") == "pong":
                    return frames
                if frame.get("type") == "snapshot":
                    frames.append(frame)

    return asyncio.run(probe())
