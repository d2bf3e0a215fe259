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

Newest per engine: a snapshot message (`coalesce_types`, keyed by its `engine_id`) sent to a member
that has not yet received the previous snapshot of the same engine replaces that one in place,
instead of queueing behind it. A viewer whose consumer falls behind the loop (hundreds of viewers
on a busy machine) then gets the newest frame of each engine when its turn comes, not a backlog of
stale ones, each later than the last; it is the same rule the consumer applies to a client whose
socket is slow (only the latest frame per engine is kept), one step earlier.
"""
from __future__ import annotations

import asyncio
import time
from copy import deepcopy
from typing import Any

from channels.layers import InMemoryChannelLayer

from gpu_engine.wire import MESSAGE_TYPE


class FanoutInMemoryChannelLayer(InMemoryChannelLayer):
    def __init__(self, *args: Any, sweep_interval: float = 1.0, coalesce_types: tuple[str, ...] = (MESSAGE_TYPE,),
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if sweep_interval < 0:
            raise ValueError(f"sweep_interval must be >= 0, got {sweep_interval}")
        self.sweep_interval = float(sweep_interval)
        self.coalesce_types = frozenset(coalesce_types)
        self._next_sweep = 0.0
        # channel -> (type, engine id) -> the queued message not yet received (replaced in place)
        self._unreceived: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self.sweep_interval
        super()._clean_expired()
        # Forget queued messages the sweep removed: a newer one must not replace a message nobody gets.
        for channel, waiting in list(self._unreceived.items()):
            queue = self.channels.get(channel)
            # asyncio.Queue keeps its items in `_queue`; the upstream sweep reads it the same way.
            queued = {id(entry[1]) for entry in queue._queue} if queue is not None else set()  # noqa: SLF001
            for key, message in list(waiting.items()):
                if id(message) not in queued:
                    del waiting[key]
            if not waiting:
                del self._unreceived[channel]

    def _coalesce_key(self, message: dict[str, Any]) -> tuple[str, str] | None:
        kind, engine_id = message.get("type"), message.get("engine_id")
        return (kind, engine_id) if kind in self.coalesce_types and isinstance(engine_id, str) else None

    async def receive(self, channel: str) -> dict[str, Any]:
        message: dict[str, Any] = await super().receive(channel)  # channels is untyped: a message is a dict
        waiting = self._unreceived.get(channel)
        if waiting:
            key = self._coalesce_key(message)
            if key is not None and waiting.get(key) is message:
                del waiting[key]
                if not waiting:
                    del self._unreceived[channel]
        return message

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        assert "__asgi_channel__" not in message
        self.require_valid_group_name(group)
        self._clean_expired()
        members = self.groups.get(group)
        if not members:
            return
        shared = deepcopy(message)
        key = self._coalesce_key(shared)
        expires = time.time() + self.expiry
        for channel in list(members):
            if key is not None:
                older = self._unreceived.get(channel, {}).get(key)
                if older is not None:  # still queued: the newer snapshot takes its place
                    older.clear()
                    older.update(shared)
                    continue
            queue = self.channels.get(channel)
            if queue is None:
                queue = self.channels[channel] = asyncio.Queue(maxsize=self.get_capacity(channel))
            own = dict(shared)
            try:
                queue.put_nowait((expires, own))
            except asyncio.QueueFull:
                continue  # a member that does not read loses this message, as with the upstream layer
            if key is not None:
                self._unreceived.setdefault(channel, {})[key] = own
