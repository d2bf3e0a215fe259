"""Which CUDA backends of this process live on which device, and whether their context is still sound.

All workers on one device share its primary context. A fault there (an illegal address, a failed
launch) is sticky: every later call in that context fails, for every worker, until the context is
destroyed, which happens only when the last worker releases it. So a fault bumps the device's
generation; a backend of an older generation rebuilds itself before its next call, and a new
backend waits (bounded) until no older one still holds the context, so it retains a fresh one.
The same registry gives each worker its share of the device's memory (`share_bytes`).
"""
from __future__ import annotations

import threading
import time
from typing import Any

USABLE_FRACTION = 0.9  # of free + held memory; the rest is left to the driver and other processes
STALE_WAIT_SECS = 30.0

_cond = threading.Condition()
_generation: dict[int, int] = {}
_live: dict[int, dict[int, tuple[Any, int]]] = {}  # ordinal -> id(backend) -> (backend, generation)


def generation(ordinal: int) -> int:
    with _cond:
        return _generation.get(ordinal, 0)


def join(ordinal: int, backend: Any, wait_secs: float = STALE_WAIT_SECS) -> int:
    """Register `backend` on `ordinal` once no backend of an older generation holds the context;
    returns the generation it joins. TimeoutError when stale ones still hold it after `wait_secs`."""
    deadline = time.monotonic() + wait_secs
    with _cond:
        while True:
            current = _generation.get(ordinal, 0)
            stale = [b for b, gen in _live.get(ordinal, {}).values() if gen < current]
            if not stale:
                _live.setdefault(ordinal, {})[id(backend)] = (backend, current)
                return current
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{len(stale)} worker(s) still hold the faulted context of GPU {ordinal}")
            _cond.wait(min(left, 1.0))


def leave(ordinal: int, backend: Any) -> None:
    with _cond:
        _live.get(ordinal, {}).pop(id(backend), None)
        _cond.notify_all()


def fault(ordinal: int, seen_generation: int) -> None:
    """The context of `seen_generation` faulted: every backend of it must rebuild (counted once)."""
    with _cond:
        if _generation.get(ordinal, 0) == seen_generation:
            _generation[ordinal] = seen_generation + 1
        _cond.notify_all()


def is_stale(ordinal: int, seen_generation: int) -> bool:
    with _cond:
        return _generation.get(ordinal, 0) != seen_generation


def workers(ordinal: int) -> int:
    with _cond:
        return len(_live.get(ordinal, {}))


def share_bytes(ordinal: int, free_bytes: int) -> int:
    """What one worker on `ordinal` may hold: the device's free memory plus what its workers hold
    now, times USABLE_FRACTION, split evenly between them."""
    with _cond:
        live = [b for b, _ in _live.get(ordinal, {}).values()]
    held = sum(getattr(getattr(b, "ops", None), "held_bytes", 0) for b in live)
    return int((free_bytes + held) * USABLE_FRACTION) // max(1, len(live))
