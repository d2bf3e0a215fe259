"""The render caches' one container: a small thread-safe LRU shared by the consumer's loop and the
page's worker threads.

A cache of per-snapshot builds (keys `(engine id, seq, ...)`) may also be bounded per engine
(`per_engine`): only the newest few builds of an engine are ever asked for again (a new client and a
resync get the latest snapshot, a fan-out asks for each build within moments, a build overtaken by a
newer snapshot is skipped), so without that bound a busy engine fills the whole cache with its stale
builds and the process holds `size` whole frames of it, growing with time, not with what is served.
"""
from __future__ import annotations

import threading
from collections import OrderedDict, deque
from typing import Any, Callable, Generic, TypeVar

V = TypeVar("V")


def _engine_of(key: Any) -> Any:
    """The group a key counts against: its first item (the engine id) when it is a tuple."""
    return key[0] if isinstance(key, tuple) and key else key


class LRU(Generic[V]):
    """A small thread-safe LRU dict: the consumer's loop and the page's worker threads share it.

    At most `size` entries, and with `per_engine`, at most that many whose keys share their first
    item (the oldest added of that engine goes first)."""

    def __init__(self, size: int, per_engine: int | None = None) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        if per_engine is not None and per_engine < 1:
            raise ValueError(f"per_engine must be >= 1 or None, got {per_engine}")
        self.size = size
        self.per_engine = per_engine
        self._data: OrderedDict[Any, V] = OrderedDict()
        self._by_engine: dict[Any, deque[Any]] = {}  # engine -> its keys in _data, oldest added first
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_build(self, key: Any, build: Callable[[], V]) -> V:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
        value = build()  # outside the lock: two racing builders make the same value, harmlessly
        with self._lock:
            self.misses += 1
            if key not in self._data and self.per_engine is not None:
                self._add_to_engine(key)
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                old, _ = self._data.popitem(last=False)
                self._drop_from_engine(old)
        return value

    def _add_to_engine(self, key: Any) -> None:
        keys = self._by_engine.setdefault(_engine_of(key), deque())
        keys.append(key)
        while len(keys) > (self.per_engine or 0):
            self._data.pop(keys.popleft(), None)

    def _drop_from_engine(self, key: Any) -> None:
        if self.per_engine is None:
            return
        engine = _engine_of(key)
        keys = self._by_engine.get(engine)
        if keys is not None:
            keys.remove(key)
            if not keys:
                del self._by_engine[engine]

    def get(self, key: Any) -> V | None:
        """The cached value, or None (counted as a hit when found)."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
        return None

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._by_engine.clear()
            self.hits = self.misses = 0
