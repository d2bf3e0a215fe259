"""Shared helpers of the panel tests: a tracker with work in flight, an ASGI app, a clean cache, and
/ws/status/ clients with publishers on the test's loop."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from django.core.cache import cache

from gpu_engine import wire
from gpu_engine.publisher import SnapshotPublisher
from gpu_engine.tracker import StatusTracker
from tests.credentials import TOKEN

ORIGIN = (b"origin", b"http://localhost")
# What a browser's handshake carries with that origin: the Host the page was served from.
HOST = (b"host", b"localhost")
# A cuzk daemon's `GET /status` (its StatusSnapshot, field for field): a SnapDeals job mid-flight.
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cuzk-status-snapdeals.json"
SNAP_JOB = "ps-snap-1000-42-7"


def cuzk_fixture() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


def busy_tracker(job_id: str = SNAP_JOB, kind: str = "snap-update", partitions: int = 4) -> StatusTracker:
    """Two workers; partition 0 done, 1 on the GPU (W0), 2 failed with an error, 3 synthesizing."""
    t = StatusTracker(synth_max=2, backend="cpu")
    t.register_workers([(0, 0), (1, 0)])
    t.register_job(job_id, kind, partitions)
    for p in range(3):
        t.partition_synth_start(job_id, p)
        t.partition_synth_end(job_id, p)
    t.partition_gpu_start(job_id, 0, 1)
    t.partition_finalize_start(job_id, 0, 1)
    t.partition_gpu_end(job_id, 0, 1)
    t.partition_gpu_start(job_id, 1, 0)
    t.partition_failed(job_id, 2, "MSM kernel launch failed: out of memory on GPU 0 <&>")
    t.partition_synth_start(job_id, 3)
    return t


def clear_panel_cache() -> None:
    engines = wire.known_engines()
    cache.delete_many([wire.snapshot_key(e) for e in engines] + [wire.ENGINES_KEY])


def build_app():
    from vastmanager.asgi import build_application

    return build_application()


def communicator(path: str, headers: list[tuple[bytes, bytes]]):
    """A WebSocket client of the application, sending the Host header a browser sends (unless given)."""
    from channels.testing import WebsocketCommunicator

    if not any(name == b"host" for name, _ in headers):
        headers = [HOST, *headers]
    return WebsocketCommunicator(build_app(), path, headers=headers)


async def open_status(query: str = "", *, extensions: dict[str, Any] | None = None) -> Any:
    """A connected /ws/status/ client with the test token, from the panel's origin: `query` follows
    the token (`&format=json&patch=1`); `extensions` are what a server puts in the scope."""
    comm = communicator(f"/ws/status/?token={TOKEN}{query}", [ORIGIN])
    if extensions is not None:
        comm.scope["extensions"] = extensions
    connected, _ = await comm.connect()
    assert connected
    return comm


async def next_frame(comm: Any, timeout: float = 5.0) -> dict[str, Any]:
    """The client's next frame, decoded (a frame missing after `timeout` s fails the test)."""
    return json.loads(await comm.receive_from(timeout=timeout))


def loop_publisher(tracker: StatusTracker, engine_id: str, heartbeat_secs: float = 5.0) -> SnapshotPublisher:
    """A publisher sending on the running loop (the test's), as a served engine's sends on the server's."""
    pub = SnapshotPublisher(tracker, engine_id, heartbeat_secs=heartbeat_secs)
    pub.attach_loop(asyncio.get_running_loop())
    return pub
