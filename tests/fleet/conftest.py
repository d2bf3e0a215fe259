"""The fleet tests: cuzk-like servers on loopback (tests/fleet/cuzk_server.py), a clean panel cache,
collectors, the admin's Source form, and the network namespaces of the end-to-end tests."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fleet import netns, sshd
from tests.fleet.cuzk_server import CuzkServer


@pytest.fixture
def cuzk_server() -> Iterator[CuzkServer]:
    """A cuzk-like server serving the fixture with a moving clock (switch `.mode` to misbehave)."""
    with CuzkServer("fixture") as server:
        yield server


@pytest.fixture
def collector(clean_panel_cache) -> Iterator[Any]:
    """A FleetCollector reading the Source table as `watchfleet` does (sources come and go with
    `addsource`; its tests need `django_db(transaction=True)`), stopped after the test."""
    from statuspanel.fleet.collector import FleetCollector

    running = FleetCollector(reload_secs=0.2).start()
    yield running
    running.stop()


@pytest.fixture
def ssh_key(tmp_path: Path) -> tuple[Path, Any]:
    """A client key for the ssh transport: (its private key file, the asyncssh key to authorize)."""
    from tests.fleet.ssh_server import client_key

    path = tmp_path / "id_ed25519"
    return path, client_key(path)


@pytest.fixture(scope="module")
def netns_lab() -> Iterator[netns.NetnsLab]:
    """Network namespaces for one module's "hosts" (tests/fleet/netns.py), one with sshd in it,
    removed afterwards; skips, saying why, where namespaces or sshd cannot be had."""
    reason = netns.unavailable_reason() or sshd.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with netns.NetnsLab() as lab:
        yield lab


def source_form(**fields: str) -> dict[str, str]:
    """The admin's Source form as a browser posts it (log in with pytest-django's `admin_client`): an
    enabled HTTP source, no state-change rows inline, with `fields` over that."""
    return {"kind": "cuzk", "transport": "http", "url": "", "ssh_port": "22", "known_hosts_policy": "pin",
            "interval_secs": "1.5", "enabled": "on", "events-TOTAL_FORMS": "0", "events-INITIAL_FORMS": "0",
            "events-MIN_NUM_FORMS": "0", "events-MAX_NUM_FORMS": "0", **fields}


def wait_until(predicate, timeout: float, what: str = "condition", step: float = 0.05):
    """Poll `predicate()` until it returns something truthy (returned), or fail saying what was awaited."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout:.1f} s")
        time.sleep(step)


class Recorder:
    """Collects the collector's state changes (the DB-less stand-in for the SourceEvent table)."""

    def __init__(self) -> None:
        import threading

        self.events: list[tuple[str, str, str, str, str]] = []
        self._lock = threading.Lock()

    def __call__(self, source_id: int, name: str, previous: str, state: str, reason: str, error: str,
                 at: float) -> None:
        with self._lock:
            self.events.append((name, previous, state, reason, error))

    def states(self, name: str) -> list[str]:
        with self._lock:
            return [e[2] for e in self.events if e[0] == name]


@pytest.fixture
def collect(clean_panel_cache):
    """`collect(configs)` starts a FleetCollector on those configs (no database), stopped after the test."""
    from statuspanel.fleet.collector import FleetCollector

    started = []

    def start(configs, **kwargs):
        recorder = Recorder()
        collector = FleetCollector(load_sources=lambda: list(configs), record_state_change=recorder,
                                   reload_secs=kwargs.pop("reload_secs", 0.2), **kwargs)
        collector.recorder = recorder
        started.append(collector.start())
        return collector

    yield start
    for collector in started:
        collector.stop()
