"""An in-memory channel layer for broadcast to many sockets: a rate-limited expiry sweep and a
group send that costs one copy of the message, not one task and one deep copy per member.

Channels' InMemoryChannelLayer sweeps every channel for expired messages on *every* send and
receive; with N sockets in a group each broadcast costs N receives x N channels, quadratic in the
number of clients (measured: the largest single cost of the panel's fan-out at 200 clients).
Sweeping at most every `sweep_interval` seconds keeps the semantics (messages still expire, a
channel with an expired message still leaves its groups) at a delay of at most that interval.

Its `group_send` starts one task per member, each deep-copying the message (a snapshot message is
tens of KB of JSON text): at 500 viewers and 10 snapshots a second that is 5,000 tasks and copies a
second before a byte is written (profiled with bench/websocket.py's BENCH_PROFILE). Here a group
send deep-copies the message once and gives each member its own shallow copy of it, on the spot:
members may replace keys of their message, and the values below it are the one copy, which the
layer's receivers only read (a receiver that mutated nested values would see another's changes;
the panel's consumers never do). A full member queue drops the message for that member, as upstream.
"""
from __future__ import annotations

import asyncio
import time
from copy import deepcopy
from typing import Any

from channels.layers import InMemoryChannelLayer


class FanoutInMemoryChannelLayer(InMemoryChannelLayer):
    def __init__(self, *args, sweep_interval: float = 1.0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if sweep_interval < 0:
            raise ValueError(f"sweep_interval must be >= 0, got {sweep_interval}")
        self.sweep_interval = float(sweep_interval)
        self._next_sweep = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self.sweep_interval
        super()._clean_expired()

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        assert "__asgi_channel__" not in message
        self.require_valid_group_name(group)
        self._clean_expired()
        members = self.groups.get(group)
        if not members:
            return
        shared = deepcopy(message)
        expires = time.time() + self.expiry
        for channel in list(members):
            queue = self.channels.get(channel)
            if queue is None:
                queue = self.channels[channel] = asyncio.Queue(maxsize=self.get_capacity(channel))
            try:
                queue.put_nowait((expires, dict(shared)))
            except asyncio.QueueFull:
                pass  # a member that does not read loses this message, as with the upstream layer
