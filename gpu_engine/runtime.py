"""The engine running in this process, if any: the seam through which views reach live state.

gpu_engine never imports statuspanel; statuspanel asks here for this process's tracker.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpu_engine.schema import Snapshot
    from gpu_engine.tracker import StatusTracker

_lock = threading.Lock()
_tracker: StatusTracker | None = None
_engine_id: str | None = None


def set_local_tracker(tracker: StatusTracker | None, engine_id: str | None = None) -> None:
    global _tracker, _engine_id
    with _lock:
        _tracker, _engine_id = tracker, engine_id


def local_tracker() -> StatusTracker | None:
    return _tracker


def local_engine_id() -> str | None:
    return _engine_id


def local_snapshot() -> Snapshot | None:
    """This process's engine snapshot stamped with its engine id, or None when no engine runs here."""
    tracker, engine_id = _tracker, _engine_id
    if tracker is None:
        return None
    snap = tracker.snapshot()
    if snap.get("engine_id") is None:  # the tracker leaves engine_id None until stamped
        snap["engine_id"] = engine_id
    return snap
