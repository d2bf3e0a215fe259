"""Live state of this engine: what every GPU worker and every partition is doing, right now.

`StatusTracker` (core.py) takes the engine's transitions and produces snapshots (snapshot.py,
schema in docs/SNAPSHOT.md); records.py holds its plain per-worker, per-job and per-partition
records. The tracker API and its call sequences are documented in docs/TRACKER.md.
"""
from __future__ import annotations

from gpu_engine.tracker.core import StatusTracker
from gpu_engine.tracker.records import TrackerError

__all__ = ["StatusTracker", "TrackerError"]
