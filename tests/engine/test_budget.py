"""MemoryBudget: blocking acquire, timeouts, FIFO order, and never more than the total handed out."""
from __future__ import annotations

import random
import threading
import time

import pytest

from gpu_engine.budget import MemoryBudget


def test_acquire_and_release_track_used_and_available() -> None:
    b = MemoryBudget(100)
    assert b.acquire(30) and b.try_acquire(70)
    assert (b.total_bytes, b.used_bytes, b.available_bytes) == (100, 100, 0)
    assert not b.try_acquire(1)
    b.release(70)
    assert (b.used_bytes, b.available_bytes) == (30, 70)


def test_blocking_acquire_wakes_on_release() -> None:
    b = MemoryBudget(100)
    assert b.acquire(80)
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(b.acquire(50, timeout=10.0)))
    waiter.start()
    time.sleep(0.05)
    assert got == [] and waiter.is_alive()
    b.release(80)
    waiter.join(timeout=5.0)
    assert got == [True]
    assert b.used_bytes == 50


def test_acquire_times_out_with_false() -> None:
    b = MemoryBudget(10)
    assert b.acquire(10)
    start = time.monotonic()
    assert b.acquire(5, timeout=0.05) is False
    assert time.monotonic() - start >= 0.04
    assert b.acquire(5, timeout=0) is False
    assert b.used_bytes == 10


def test_timed_out_waiter_does_not_block_the_queue() -> None:
    b = MemoryBudget(10)
    assert b.acquire(8)
    assert b.acquire(10, timeout=0.02) is False     # gave up: must leave the queue
    assert b.try_acquire(2)


def test_waiters_are_served_in_order() -> None:
    b = MemoryBudget(100)
    assert b.acquire(100)
    order: list[str] = []
    big = threading.Thread(target=lambda: (b.acquire(90, timeout=10.0), order.append("big")))
    big.start()
    time.sleep(0.05)
    small = threading.Thread(target=lambda: (b.acquire(10, timeout=10.0), order.append("small")))
    small.start()
    time.sleep(0.05)
    assert not b.try_acquire(1)                     # someone is queued: no jumping ahead
    b.release(100)
    big.join(timeout=5.0)
    small.join(timeout=5.0)
    assert order == ["big", "small"]
    assert b.used_bytes == 100


@pytest.mark.parametrize("call", ["acquire", "try_acquire"])
def test_more_than_total_raises(call: str) -> None:
    b = MemoryBudget(1024)
    with pytest.raises(ValueError, match="cannot reserve 1025 bytes from a budget of 1024"):
        getattr(b, call)(1025)


@pytest.mark.parametrize("bad", [-1, 1.5, "10", None, True])
def test_bad_byte_counts_raise(bad) -> None:
    b = MemoryBudget(100)
    with pytest.raises(ValueError):
        b.acquire(bad)
    with pytest.raises(ValueError):
        b.release(bad)


@pytest.mark.parametrize("bad", [0, -5, 2.0, "1GiB", True])
def test_bad_total_raises(bad) -> None:
    with pytest.raises(ValueError):
        MemoryBudget(bad)


def test_release_of_more_than_reserved_raises() -> None:
    b = MemoryBudget(100)
    assert b.acquire(10)
    with pytest.raises(ValueError, match="only 10 are reserved"):
        b.release(11)
    assert b.used_bytes == 10


def test_reserved_context_manager_returns_the_bytes() -> None:
    b = MemoryBudget(100)
    with b.reserved(60):
        assert b.used_bytes == 60
        with pytest.raises(TimeoutError):
            with b.reserved(60, timeout=0.01):
                pass
    assert b.used_bytes == 0


def test_concurrent_acquire_release_never_exceeds_total() -> None:
    total = 1000
    b = MemoryBudget(total)
    in_use = [0]
    peak = [0]
    guard = threading.Lock()
    errors: list[str] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(200):
            n = rng.randint(1, 400)
            if not b.acquire(n, timeout=10.0):
                errors.append("timed out")
                return
            with guard:
                in_use[0] += n
                peak[0] = max(peak[0], in_use[0])
                if in_use[0] > total or b.used_bytes > total:
                    errors.append(f"over budget: {in_use[0]}")
            time.sleep(0)           # hold the bytes across a thread switch
            with guard:
                in_use[0] -= n
            b.release(n)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert b.used_bytes == 0
    assert peak[0] > 400            # the threads did overlap
