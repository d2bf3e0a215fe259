"""The alerts on the WebSocket stream: this serving process's watcher of the firing alerts.

The evaluator runs in one process of the deployment (a lease); the panel's clients are connected to
every serving process. So each serving process watches the database itself: a light poll of the
firing alerts every `ALERTS_EVAL_SECS` (at once after an acknowledge or silence handled here), and
when the set or its state changed, one group message with both frames encoded
(statuspanel/stream/alerts.py) onto this process's own group, through the one way onto the wire
(gpu_engine/delivery.py: the in-memory layer needs its sends on the server's loop). The group is
per process so that, on a shared (Redis) layer, a client never gets the same change from every
dashboard process.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection

from gpu_engine.delivery import Busy, Delivery, SendPolicy
from statuspanel.alerts.panel import firing_alerts
from statuspanel.stream.alerts import MESSAGE_TYPE, encode_frames, group_message

log = logging.getLogger(__name__)

# This process's group: only its own consumers join it (channel-layer group names: [a-z0-9._-]).
ALERTS_GROUP = f"vastmanager.alerts.{uuid.uuid4().hex[:16]}"
POLICY = SendPolicy(busy=Busy.WAIT, cancelled_is_error=True)


def _state_key(alerts: list[dict[str, Any]]) -> tuple[tuple[Any, ...], ...]:
    """What a change is: an alert in or out, or its message, acknowledge or silence changed."""
    return tuple((a["id"], a["message"], a["acknowledged_at"], a["silenced_until"]) for a in alerts)


class AlertStream:
    """Polls the firing alerts; publishes the frames when they change; keeps the latest for new clients."""

    def __init__(self, *, interval: float | None = None, delivery: Delivery | None = None) -> None:
        self.interval = interval if interval is not None else float(getattr(settings, "ALERTS_EVAL_SECS", 1.0))
        self.delivery = delivery or Delivery(POLICY, what="alerts", group=ALERTS_GROUP)
        self.seq = 0
        self.latest: tuple[int, str, str] | None = None  # (seq, JSON frame, HTML frame)
        self.errors = 0
        self._key: tuple[tuple[Any, ...], ...] | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def attach_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        self.delivery.attach_loop(loop)

    def start(self) -> AlertStream:
        self._thread = threading.Thread(target=self._main, name="alerts-stream", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
        self.delivery.close()

    def wake(self) -> None:
        """Look again now (an operator acted in this process)."""
        self._wake.set()

    def _main(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    close_old_connections()
                    self.poll()
                except Exception:  # the database away for a moment: the next poll tries again
                    self.errors += 1
                    log.exception("alerts: reading the firing alerts for the stream failed")
                    connection.close()
                self._wake.wait(self.interval)
                self._wake.clear()
        finally:
            connection.close()

    def poll(self) -> bool:
        """Read the firing alerts; publish when they changed. Whether a frame was published."""
        alerts = firing_alerts()
        key = _state_key(alerts)
        with self._lock:
            if key == self._key and self.latest is not None:
                return False
            self.seq += 1
            frames = encode_frames(alerts, self.seq)
            self.latest, self._key = (self.seq, *frames), key
            message = group_message(self.seq, frames)
        try:
            self.delivery.send(message)
        except Exception:  # noqa: BLE001 - counted; the latest frames still reach every new client
            self.delivery.failed(MESSAGE_TYPE)
        return True


_current: AlertStream | None = None


def start_stream(server_loop: asyncio.AbstractEventLoop | None) -> AlertStream:
    """Start this process's alert stream, sending through `server_loop` (None: a loop of its own)."""
    global _current
    stream = AlertStream()
    if server_loop is not None:
        stream.attach_loop(server_loop)
    _current = stream.start()
    return stream


def stop_stream() -> None:
    global _current
    stream, _current = _current, None
    if stream is not None:
        stream.stop()


def current_stream() -> AlertStream | None:
    return _current


def changed() -> None:
    """An acknowledge or silence was recorded in this process: its clients hear of it now."""
    if _current is not None:
        _current.wake()


def frames_now() -> tuple[int, str, str]:
    """The latest (seq, JSON frame, HTML frame) for a client that just connected: the stream's when it
    runs in this process, else read now (seq 0: nothing follows it)."""
    stream = _current
    if stream is not None and stream.latest is not None:
        return stream.latest
    return (0, *encode_frames(firing_alerts(), 0))
