"""The live-status tests (publisher, consumer, rendering, page): caches that outlive a test, cleared."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from statuspanel import fleet_render, rendering
from tests.panel.helpers import clear_panel_cache


@pytest.fixture
def clean_panel_cache() -> Iterator[None]:
    """No engine snapshots in Django's cache before or after: the cache is shared by every test."""
    clear_panel_cache()
    yield
    clear_panel_cache()


@pytest.fixture
def fresh_render_caches() -> None:
    """The rendering's memoised fragments and frames start empty (their hit counts are asserted)."""
    rendering.html_cache.clear()
    rendering.frame_cache.clear()
    fleet_render.rate_meter.clear()
