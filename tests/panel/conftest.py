"""The live-status tests (publisher, consumer, rendering, page): caches that outlive a test, cleared."""
from __future__ import annotations

import pytest

from statuspanel.render import engine as rendering
from statuspanel.render import fleet as fleet_render
from statuspanel.stream import frames


@pytest.fixture
def fresh_render_caches() -> None:
    """The rendering's memoised fragments and frames start empty (their hit counts are asserted)."""
    rendering.html_cache.clear()
    frames.frame_cache.clear()
    fleet_render.rate_meter.clear()
