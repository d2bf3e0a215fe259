"""A dashboard process for the fleet's end-to-end tests: its own data directory and database, sources
added with `manage.py addsource`, served by `manage.py watchfleet` (or `runprover`), watched through
`GET /api/fleet`. Also starts our own engines (`runprover`) as remote sources with a status token, and
names what the browser tests look for on the panel."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.process_support import free_port, stop_now, wait_http

ROOT = Path(__file__).resolve().parents[2]

# The panel as the browser tests read it: an engine's section, and its source state (a JS function of the id).
STATE_OF = """(id) => { const s = document.querySelector('section.engine[data-engine-id="' + id + '"]');
  const b = s && s.querySelector('[data-source-state]'); return b ? b.dataset.sourceState : null; }"""


def engine_section(engine: str) -> str:
    """The CSS selector of engine `engine`'s section on the panel."""
    return f'#engines section.engine[data-engine-id="{engine}"]'


def process_env(data: Path, **extra: str) -> dict[str, str]:
    """An environment of its own: data directory (SQLite, token file), no shared Redis or database."""
    env = dict(os.environ, VASTMANAGER_DATA_DIR=str(data), VASTMANAGER_PARAMS_DIR=str(ROOT / "data" / "params"),
               LOG_LEVEL="WARNING", PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT), **extra)
    for var in ("DATABASE_URL", "REDIS_URL", "VASTMANAGER_STATUS_TOKEN"):
        if var not in extra:
            env.pop(var, None)
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return done


class Dashboard:
    """`watchfleet` on 127.0.0.1 with a database of its own; `with Dashboard(tmp, token) as d:`."""

    def __init__(self, workdir: Path, token: str, *, command: Sequence[str] = ("watchfleet",)) -> None:
        self.dir = Path(workdir)
        self.token = token
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = process_env(self.dir / "data", VASTMANAGER_TOKEN=token)
        self.log = self.dir / "dashboard.log"
        self.command = list(command)
        self.proc: subprocess.Popen | None = None
        manage(self.env, "migrate", "--noinput", "-v0")

    def add_source(self, name: str, *args: str) -> None:
        manage(self.env, "addsource", name, *args)

    def add_sources(self, sources: Sequence[Sequence[str]]) -> None:
        """Many sources in one process (a command per source costs a second of start-up each): each
        `[name, *args]` goes through the same `addsource` command."""
        script = ("import json, sys, django; django.setup(); from django.core.management import call_command\n"
                  "for argv in json.loads(sys.argv[1]): call_command('addsource', *argv)")
        done = subprocess.run([sys.executable, "-c", script, json.dumps([list(a) for a in sources])], cwd=ROOT,
                              env=dict(self.env, DJANGO_SETTINGS_MODULE="vastmanager.settings"),
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"addsource exited {done.returncode}: {done.stderr[-2000:]}")

    def start(self) -> Dashboard:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), *self.command, "--bind",
                                      f"127.0.0.1:{self.port}"], cwd=ROOT, env=self.env, stdout=self.log.open("w"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        wait_http(f"{self.base}/healthz", self.proc, timeout=120)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop_now(self.proc)

    def tail(self, n: int = 3000) -> str:
        return self.log.read_text()[-n:] if self.log.exists() else ""

    def fleet(self) -> dict[str, dict[str, Any]]:
        """Every engine's latest snapshot from `GET /api/fleet`, by engine id."""
        request = urllib.request.Request(f"{self.base}/api/fleet", headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = json.loads(response.read())
        engines = body["engines"] if isinstance(body, dict) else body
        return {e["engine_id"]: e for e in engines}

    def wait_for(self, name: str, predicate, timeout: float, what: str = "") -> dict[str, Any]:
        """Poll /api/fleet until `predicate(snapshot)` holds for engine `name`; its snapshot."""
        deadline = time.monotonic() + timeout
        last: dict[str, Any] | None = None
        while time.monotonic() < deadline:
            last = self.fleet().get(name)
            if last is not None and predicate(last):
                return last
            time.sleep(0.1)
        source = (last or {}).get("source")
        raise AssertionError(f"{name}: {what or 'condition'} not met in {timeout:.1f}s; last source: {source}")

    def wait_state(self, name: str, state: str, timeout: float) -> dict[str, Any]:
        return self.wait_for(name, lambda s: (s.get("source") or {}).get("state") == state, timeout,
                             f"state {state}")

    def wait_states(self, expected: Mapping[str, tuple[str, str]], timeout: float, *, at_least: float = 0.0,
                    each: Callable[[], object] = lambda: None) -> dict[str, dict[str, Any]]:
        """Poll /api/fleet until every named source has reached its (state, reason), and at least
        `at_least` s have passed (the others poll on meanwhile); each one's source as it reached it.
        `each()` runs once a round (a probe timed while the sources misbehave)."""
        started = time.monotonic()
        pending, reached = dict(expected), {}
        while (pending or time.monotonic() < started + at_least) and time.monotonic() < started + timeout:
            each()
            engines = self.fleet()
            for name, wanted in list(pending.items()):
                source = (engines.get(name) or {}).get("source") or {}
                if (source.get("state"), source.get("reason")) == wanted:
                    reached[name] = source
                    pending.pop(name)
            time.sleep(0.2)
        assert not pending, {name: self.fleet().get(name, {}).get("source") for name in pending}
        return reached

    def assert_polled_on(self, seqs: Mapping[str, int]) -> None:
        """Each named source is online with a newer snapshot than its seq in `seqs`."""
        engines = self.fleet()
        for name, seq in seqs.items():
            assert engines[name]["seq"] > seq and engines[name]["source"]["state"] == "online", name

    def __enter__(self) -> Dashboard:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is not None and issubclass(exc_type, Exception):
            print(self.tail())  # what the dashboard said, for a setup that failed inside `with`
        self.stop()


def start_engine(workdir: Path, *, bind: str, status_token: str, engine_id: str, demo: bool = False,
                 popen=None) -> tuple[subprocess.Popen, Path]:
    """`runprover` serving with a read-only status token (its operator token stays unknown to the
    dashboard); `popen` runs it elsewhere (a namespace's `Host.popen`)."""
    host = bind.rsplit(":", 1)[0]
    env = process_env(Path(workdir) / "data", VASTMANAGER_TOKEN=f"{engine_id}-operator-token-0123",
                      VASTMANAGER_STATUS_TOKEN=status_token, ALLOWED_HOSTS=f"{host},localhost,127.0.0.1")
    manage(env, "migrate", "--noinput", "-v0")
    log = Path(workdir) / "runprover.log"
    cmd = [sys.executable, str(ROOT / "manage.py"), "runprover", "--backend", "cpu", "--engine-id", engine_id,
           "--bind", bind, *(["--demo"] if demo else [])]
    kwargs = dict(cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    proc = popen(cmd, **kwargs) if popen else subprocess.Popen(cmd, start_new_session=True, **kwargs)
    return proc, log


def wait_engine(url: str, proc: subprocess.Popen, timeout: float = 180) -> None:
    wait_http(f"{url}/healthz", proc, timeout=timeout)


class DemoEngine:
    """One of ours beside a fleet's cuzk daemons: `runprover --demo` on a free loopback port, read
    with its status token. `with DemoEngine(dir, token) as ours:` starts it without waiting (the
    dashboard starts meanwhile); `ours.wait()` until it serves; stopped when the block ends."""

    def __init__(self, workdir: Path, status_token: str, engine_id: str = "ours-local") -> None:
        self.workdir, self.status_token, self.engine_id = Path(workdir), status_token, engine_id
        self.url = f"http://127.0.0.1:{free_port()}"
        self.proc: subprocess.Popen | None = None

    def source(self, name: str, *args: str) -> list[str]:
        """`addsource` arguments of a source reading this engine (for `Dashboard.add_sources`)."""
        return [name, "--kind", "vastmanager", "--url", self.url, "--token", self.status_token, *args]

    def wait(self) -> None:
        assert self.proc is not None, "not started"
        wait_engine(self.url, self.proc)

    def __enter__(self) -> DemoEngine:
        self.proc, _ = start_engine(self.workdir, bind=self.url.removeprefix("http://"),
                                    status_token=self.status_token, engine_id=self.engine_id, demo=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop_now(self.proc)
