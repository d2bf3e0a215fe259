"""Two dashboard processes (`watchfleet`) on one PostgreSQL database and one Redis: exactly one
evaluates; SIGKILL it and the other takes over within a few seconds, without repeating the
notification already sent, and goes on notifying what fires next."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.alerts.receivers import WebhookReceiver
from tests.fleet.conftest import wait_until
from tests.process_support import free_port
from tests.services import REDIS_URL, private_database, private_redis_prefix, services_up

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _holder(url: str) -> str | None:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT holder FROM alerts_evaluatorlease WHERE expires_at > now()").fetchone()
    return row[0] if row else None


def test_one_evaluator_and_a_clean_takeover_after_sigkill(tmp_path) -> None:
    why = services_up()
    if why:
        pytest.skip(why)
    with private_database("alerts") as db_url, private_redis_prefix() as prefix, WebhookReceiver() as hook:
        env = {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": REDIS_URL, "REDIS_PREFIX": prefix,
               "VASTMANAGER_DATA_DIR": str(tmp_path), "VASTMANAGER_TOKEN": "t" * 32, "ALERTS_LEASE_SECS": "2",
               "ALERTS_EVAL_SECS": "0.5", "ALERTS_GROUP_WAIT_SECS": "0.5", "ALERTS_GROUP_INTERVAL_SECS": "1",
               "FLEET_RELOAD_SECS": "0.5", "PYTHONUNBUFFERED": "1"}
        env.pop("DJANGO_SETTINGS_MODULE", None)

        def manage(*args: str) -> None:
            subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, timeout=300,
                           capture_output=True)

        manage("migrate", "--noinput", "-v0")
        manage("addnotifier", "hook", "--kind", "webhook", "--url", hook.url)
        manage("setalertrule", "source-down", "--for", "0")
        manage("addsource", "dark-1", "--kind", "cuzk", "--url", f"http://127.0.0.1:{_dead_port()}",
               "--interval", "0.5")
        procs = []
        try:
            for i in range(2):
                log = open(tmp_path / f"panel-{i}.log", "w")
                procs.append(subprocess.Popen(
                    [sys.executable, "manage.py", "watchfleet", "--bind", f"127.0.0.1:{free_port()}"], cwd=ROOT,
                    env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            wait_until(lambda: hook.posts, 90, "the first notification")
            holder = wait_until(lambda: _holder(db_url), 10, "a lease holder")
            pids = {p.pid: p for p in procs}
            victim = pids[int(holder.split(":")[1])]
            survivor = next(p for p in procs if p is not victim)
            time.sleep(2.0)  # both processes see the source down all this while
            assert len(hook.posts) == 1

            os.killpg(victim.pid, signal.SIGKILL)
            victim.wait(10)
            killed_at = time.monotonic()
            new = wait_until(lambda: (h := _holder(db_url)) and h != holder and h, 15, "the takeover")
            took = time.monotonic() - killed_at
            assert int(new.split(":")[1]) == survivor.pid and took < 8, f"taken over after {took:.1f} s"

            manage("addsource", "dark-2", "--kind", "cuzk", "--url", f"http://127.0.0.1:{_dead_port()}",
                   "--interval", "0.5")
            wait_until(lambda: len(hook.posts) >= 2, 60, "the survivor's notification")
            time.sleep(3.0)
        finally:
            for p in procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
        events = [(a["engine"], a["state"]) for body in hook.bodies() for a in body["alerts"]]
        assert sorted(events) == [("dark-1", "firing"), ("dark-2", "firing")], events
