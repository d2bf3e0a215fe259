"""Per-connection send window: the server says when a WebSocket client has fallen behind.

The server (`vastmanager.server`) registers a `SendWindow` as the push producer of each WebSocket
connection's transport: Twisted pauses it when the connection's write buffer passes its high-water
mark (the kernel's socket buffer is full: the client is not reading) and resumes it once that
buffer has drained. The window travels to the application in the scope, under
`scope["extensions"][EXTENSION]`; the status consumer holds back while it is closed, keeping only
the latest frame per engine, and sends those when it reopens. A window closed for longer than
`WS_SLOW_CLIENT_SECS`, or written past by more than `WS_MAX_BUFFERED_BYTES`, drops the client.
Under a server that provides no window the consumer sends as before.

Runs on the server's loop thread only (the asyncio reactor calls pause/resume there): no locks.
"""
from __future__ import annotations

import time
from typing import Any, Callable

EXTENSION = "vastmanager.send_window"


class SendWindow:
    """Open while the transport takes more data without buffering past its high-water mark."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.is_open = True
        self.closed_at: float | None = None
        self._on_open: list[Callable[[], None]] = []

    # Twisted's IPushProducer, called by the transport.
    def pauseProducing(self) -> None:  # noqa: N802 - Twisted's interface names
        if self.is_open:
            self.is_open = False
            self.closed_at = self.clock()

    def resumeProducing(self) -> None:  # noqa: N802 - Twisted's interface names
        if not self.is_open:
            self.is_open = True
            self.closed_at = None
            for callback in list(self._on_open):
                callback()

    def stopProducing(self) -> None:  # noqa: N802 - Twisted's interface names
        self._on_open.clear()

    def on_open(self, callback: Callable[[], None]) -> None:
        """Call `callback` every time the window reopens (the client caught up)."""
        self._on_open.append(callback)

    def closed_for(self) -> float:
        """Seconds the window has been closed (0 while open)."""
        return 0.0 if self.closed_at is None else self.clock() - self.closed_at


def send_window(scope: dict[str, Any]) -> SendWindow | None:
    """The connection's window, when the server provides one."""
    return (scope.get("extensions") or {}).get(EXTENSION)
