"""The collector of this serving process (`runprover` serving, `watchfleet`): started once the web
server's loop is running, so its group sends land on that loop (the in-memory layer needs it)."""
from __future__ import annotations

import asyncio

from django.conf import settings

from statuspanel.fleet.collector import FleetCollector

_current: FleetCollector | None = None


def start_collector(server_loop: asyncio.AbstractEventLoop | None) -> FleetCollector:
    """Start this process's collector, delivering through `server_loop` (None: its own loop)."""
    global _current
    collector = FleetCollector(reload_secs=settings.FLEET_RELOAD_SECS)
    if server_loop is not None:
        collector.attach_loop(server_loop)
    _current = collector.start()
    return collector


def stop_collector() -> None:
    global _current
    collector, _current = _current, None
    if collector is not None:
        collector.stop()


def current_collector() -> FleetCollector | None:
    return _current
