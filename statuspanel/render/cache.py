"""The render caches' one container: a small thread-safe LRU shared by the consumer's loop and the
page's worker threads."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Generic, TypeVar

V = TypeVar("V")


class LRU(Generic[V]):
    """A small thread-safe LRU dict: the consumer's loop and the page's worker threads share it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[Any, V] = OrderedDict()
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
            self._data[key] = value
            while len(self._data) > self.size:
                self._data.popitem(last=False)
        return value

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
            self.hits = self.misses = 0
