"""An in-memory channel layer whose expiry sweep is rate-limited, for broadcast to many sockets.

Channels' InMemoryChannelLayer sweeps every channel for expired messages on *every* send and
receive; with N sockets in a group each broadcast costs N receives x N channels, quadratic in the
number of clients (measured: the largest single cost of the panel's fan-out at 200 clients).
Sweeping at most every `sweep_interval` seconds keeps the semantics (messages still expire, a
channel with an expired message still leaves its groups) at a delay of at most that interval.
"""
from __future__ import annotations

import time

from typing import Any

from channels.layers import InMemoryChannelLayer


class FanoutInMemoryChannelLayer(InMemoryChannelLayer):
    def __init__(self, *args: Any, sweep_interval: float = 1.0, **kwargs: Any) -> None:
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
