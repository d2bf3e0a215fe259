"""The cache writer of the wire keeps a snapshot under its engine id only: a snapshot the publisher
has not stamped yet (the tracker leaves `engine_id` null) is refused, not stored under "None"."""
from __future__ import annotations

import pytest

from gpu_engine import wire
from tests.panel.helpers import busy_tracker


def test_an_unstamped_snapshot_is_refused_and_nothing_is_stored(clean_panel_cache) -> None:
    from django.core.cache import cache

    snap = busy_tracker().snapshot()
    assert snap["engine_id"] is None
    with pytest.raises(ValueError, match="stamp engine_id"):
        wire.store_snapshot(cache, snap, 2.0)
    assert cache.get(wire.snapshot_key("None")) is None
    snap["engine_id"] = "stamped-1"
    wire.store_snapshot(cache, snap, 2.0)
    assert cache.get(wire.snapshot_key("stamped-1"))["engine_id"] == "stamped-1"
