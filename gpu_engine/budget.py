"""MemoryBudget: a byte budget that partitions reserve before synthesis and return after proving.

Witnesses and device buffers are large; without a budget, synthesis runs ahead of the GPU and
the host runs out of memory. Waiters are served first come, first served, so one large
reservation is not starved by a stream of small ones.
"""
from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

_UNITS: dict[str, int] = {
    "": 1, "b": 1,
    "k": 1024, "kib": 1024, "kb": 1000,
    "m": 1024**2, "mib": 1024**2, "mb": 1000**2,
    "g": 1024**3, "gib": 1024**3, "gb": 1000**3,
    "t": 1024**4, "tib": 1024**4, "tb": 1000**4,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*$")


def parse_size(value: str | int) -> int:
    """Bytes from "8GiB", "512MiB", "1.5GB", "4096" or an int.

    KiB/MiB/GiB/TiB and the bare letters K/M/G/T are powers of 1024 (as memory limits are
    usually written); KB/MB/GB/TB are powers of 1000. Units are case-insensitive.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"a size cannot be negative: {value}")
        return value
    if not isinstance(value, str):
        raise ValueError(f"not a size: {value!r}")
    m = _SIZE_RE.match(value)
    if m is None:
        raise ValueError(f"not a size: {value!r} (expected e.g. 8GiB, 512MiB, 1.5GB or a byte count)")
    number, unit = m.groups()
    factor = _UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(f"unknown size unit {unit!r} in {value!r}; use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB")
    try:
        if "." in number:
            return int(round(float(number) * factor))
        return int(number) * factor
    except OverflowError:  # float() of 310+ digits is inf
        raise ValueError(f"size {value!r} is too large") from None


class MemoryBudget:
    """`total_bytes` to hand out; `acquire` blocks (FIFO) until the bytes are free."""

    def __init__(self, total_bytes: int) -> None:
        if isinstance(total_bytes, bool) or not isinstance(total_bytes, int) or total_bytes <= 0:
            raise ValueError(f"a memory budget needs a positive byte count, got {total_bytes!r}")
        self._total = total_bytes
        self._used = 0
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[object] = deque()

    @property
    def total_bytes(self) -> int:
        return self._total

    @property
    def used_bytes(self) -> int:
        return self._used

    @property
    def available_bytes(self) -> int:
        return self._total - self._used

    def _check(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"byte count must be a non-negative int, got {n!r}")
        if n > self._total:
            raise ValueError(f"cannot reserve {n} bytes from a budget of {self._total} bytes; "
                             "raise the budget or shrink the circuit")

    def try_acquire(self, n: int) -> bool:
        """Reserve `n` bytes only if free now and nobody is queued ahead."""
        self._check(n)
        with self._cond:
            if self._queue or self._used + n > self._total:
                return False
            self._used += n
            return True

    def acquire(self, n: int, timeout: float | None = None) -> bool:
        """Block until `n` bytes are reserved (True) or `timeout` seconds pass (False)."""
        self._check(n)
        if timeout is not None and timeout < 0:
            raise ValueError(f"timeout must be >= 0 or None, got {timeout!r}")
        with self._cond:
            if not self._queue and self._used + n <= self._total:
                self._used += n
                return True
            if timeout == 0:
                return False
            token = object()
            self._queue.append(token)
            deadline = None if timeout is None else time.monotonic() + timeout
            try:
                while self._queue[0] is not token or self._used + n > self._total:
                    if deadline is None:
                        self._cond.wait()
                    else:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            return False
                        self._cond.wait(remaining)
                self._used += n
                return True
            finally:
                self._queue.remove(token)
                # The head changed (we got the bytes or gave up): let the next waiter look.
                self._cond.notify_all()

    def release(self, n: int) -> None:
        """Return `n` bytes; returning more than is reserved is a bookkeeping bug and raises."""
        self._check(n)
        with self._cond:
            if n > self._used:
                raise ValueError(f"cannot release {n} bytes: only {self._used} are reserved")
            self._used -= n
            self._cond.notify_all()

    @contextmanager
    def reserved(self, n: int, timeout: float | None = None) -> Iterator[None]:
        """Hold `n` bytes for the body of a with-block; TimeoutError if not granted in time."""
        if not self.acquire(n, timeout):
            raise TimeoutError(f"{n} bytes not available within {timeout} s")
        try:
            yield
        finally:
            self.release(n)

    def __repr__(self) -> str:
        return f"MemoryBudget(used={self._used}, total={self._total})"
