"""The fleet tests: cuzk-like servers on loopback (tests/fleet/cuzk_server.py) and a clean panel cache."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fleet.cuzk_server import CuzkServer
from tests.panel.helpers import clear_panel_cache


@pytest.fixture
def clean_panel_cache() -> Iterator[None]:
    """No engine snapshots in Django's cache before or after: the cache is shared by every test."""
    clear_panel_cache()
    yield
    clear_panel_cache()


@pytest.fixture
def cuzk_server() -> Iterator[CuzkServer]:
    """A cuzk-like server serving the fixture with a moving clock (switch `.mode` to misbehave)."""
    with CuzkServer("fixture") as server:
        yield server
