"""The collector's state changes, written in batches and bounded per source.

Every change of a source's state (or reason) is worth a row ("when did host X drop"), but a source
that flaps writes one per poll: 200 flapping sources kept about 12 million rows a day, and their
writes, one thread doing three queries and a reconnect each, were still landing 49 s after the
flapping stopped. So `StateChangeLog` takes changes without blocking the collector's loop and
keeps at most `burst` rows per source in each `window_secs`; what a source changes beyond that is
counted and kept as one `flapping` row when its window closes (how many, into which states). The
source's own row (its current state) always follows the latest change. One writer thread writes
whatever gathered in one batch, woken by a kept change (or every `flush_secs`, for the current
states and the summaries): the backlog is bounded by the sources, not by how fast they flap.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from statuspanel.fleet.vocabulary import EVENT_FLAPPING

log = logging.getLogger(__name__)

DEFAULT_BURST = 5
DEFAULT_WINDOW_SECS = 300.0
FLUSH_SECS = 0.5


@dataclass(frozen=True)
class StateChange:
    source_id: int
    name: str
    previous: str
    state: str
    reason: str
    error: str
    at: float          # wall-clock seconds


@dataclass
class _Window:
    started: float
    kept: int = 0
    suppressed: Counter[str] = field(default_factory=Counter)  # by state
    first: StateChange | None = None     # the first change not kept one by one
    last: StateChange | None = None


# write(events to keep, the latest change of each source with one): one batch, in one thread.
BatchWriter = Callable[[list[StateChange], list[StateChange]], None]


class StateChangeLog:
    """`add()` from any thread (never blocks on the database); `start()`, `stop()` flush it all."""

    def __init__(self, write: BatchWriter, *, burst: int = DEFAULT_BURST, window_secs: float = DEFAULT_WINDOW_SECS,
                 flush_secs: float = FLUSH_SECS, clock: Callable[[], float] = time.monotonic) -> None:
        self._write = write
        self.burst, self.window_secs, self.flush_secs, self._clock = burst, window_secs, flush_secs, clock
        self._lock = threading.Lock()
        self._events: list[StateChange] = []
        self._current: dict[str, StateChange] = {}
        self._windows: dict[str, _Window] = {}
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.kept = self.suppressed = self.written = self.batches = self.max_pending = 0

    @property
    def pending(self) -> int:
        """Rows waiting for the writer (events and summaries; the current-state updates besides)."""
        with self._lock:
            return len(self._events)

    def add(self, change: StateChange) -> None:
        now = self._clock()
        with self._lock:
            self._current[change.name] = change
            window = self._windows.get(change.name)
            if window is None or now - window.started >= self.window_secs:
                if window is not None:
                    self._close(window)
                window = self._windows[change.name] = _Window(started=now)
            if window.kept < self.burst:
                window.kept += 1
                self.kept += 1
                self._events.append(change)
                self._wake.set()  # written at once; changes arriving meanwhile join the next batch
            else:
                self.suppressed += 1
                window.suppressed[change.state] += 1
                window.first = window.first or change
                window.last = change
            self.max_pending = max(self.max_pending, len(self._events))

    def _close(self, window: _Window) -> None:
        """A closing window's summary row, when it held back anything (the lock is held)."""
        if window.last is None or window.first is None:
            return
        n = sum(window.suppressed.values())
        into = ", ".join(f"{state} ×{count}" for state, count in sorted(window.suppressed.items()))
        last = window.last
        self._events.append(StateChange(
            last.source_id, last.name, window.first.previous, last.state, EVENT_FLAPPING,
            f"flapping: {n} more changes in {self.window_secs:g} s not kept one by one ({into}); "
            f"the last: {last.state}{' (' + last.reason + ')' if last.reason else ''}", last.at))

    def _take(self, *, closing: bool) -> tuple[list[StateChange], list[StateChange]]:
        now = self._clock()
        with self._lock:
            for name, window in list(self._windows.items()):
                if closing or now - window.started >= self.window_secs:
                    self._close(window)
                    del self._windows[name]
            events, self._events = self._events, []
            current, self._current = list(self._current.values()), {}
        return events, current

    def flush(self, *, closing: bool = False) -> int:
        """Write what gathered now (in the calling thread); how many rows were written."""
        events, current = self._take(closing=closing)
        if not events and not current:
            return 0
        try:
            self._write(events, current)
        except Exception:  # a batch not kept must not stop the collector
            log.exception("fleet: keeping %d state changes failed", len(events))
            return 0
        self.written += len(events)
        self.batches += 1
        return len(events)

    # -- the writer thread ----------------------------------------------------------------------
    def start(self) -> StateChangeLog:
        self._thread = threading.Thread(target=self._run, name="fleet-events", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self.flush_secs)
            self._wake.clear()
            self.flush()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the writer and keep everything left, the open windows' summaries included."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.flush(closing=True)
