"""wait_for_change: a publisher sleeps until the tracker changes (or a grace period ends)."""
from __future__ import annotations

import threading
import time

from gpu_engine.tracker import StatusTracker


def test_every_mutation_bumps_seq() -> None:
    t = StatusTracker()
    seqs = [t.seq]
    t.register_workers([(0, 0)])
    seqs.append(t.seq)
    t.register_job("j", "window-post", 1)
    seqs.append(t.seq)
    for call in (lambda: t.partition_synth_start("j", 0), lambda: t.partition_synth_end("j", 0),
                 lambda: t.partition_gpu_start("j", 0, 0), lambda: t.partition_finalize_start("j", 0, 0),
                 lambda: t.partition_gpu_end("j", 0, 0), lambda: t.job_completed("j", True)):
        call()
        seqs.append(t.seq)
    assert seqs == sorted(set(seqs))


def test_returns_at_once_when_already_changed() -> None:
    t = StatusTracker()
    t.set_queue_depth(1)
    assert t.wait_for_change(0, timeout=5.0) == t.seq == 1


def test_times_out_without_change() -> None:
    t = StatusTracker()
    start = time.monotonic()
    assert t.wait_for_change(t.seq, timeout=0.05) == 0
    assert time.monotonic() - start >= 0.04


def test_wakes_on_a_mutation_from_another_thread() -> None:
    t = StatusTracker()
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(t.wait_for_change(0, timeout=10.0)))
    waiter.start()
    time.sleep(0.02)
    start = time.monotonic()
    t.register_job("j", "porep-c2", 10)
    waiter.join(timeout=5.0)
    assert got == [1]
    assert time.monotonic() - start < 1.0


def test_wakes_when_a_grace_period_ends() -> None:
    t = StatusTracker(grace_secs=0.05)
    t.register_job("j", "window-post", 1)
    t.job_completed("j", False)
    seq = t.seq
    start = time.monotonic()
    assert t.wait_for_change(seq, timeout=5.0) > seq
    assert time.monotonic() - start < 1.0
    assert t.snapshot()["pipelines"] == []
