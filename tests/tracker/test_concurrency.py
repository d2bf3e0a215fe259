"""Many threads drive random but legal job lifecycles on shared workers; the invariants hold throughout."""
from __future__ import annotations

import queue
import random
import sys
import threading
from collections import Counter

from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.tracker import StatusTracker
from tests.tracker.invariants import check_invariants

THREADS = 8
WORKERS = 3
JOBS_PER_THREAD = 60


def _drive(t: StatusTracker, pool: queue.Queue, tid: int, done: Counter, failed: Counter,
           errors: list[BaseException], start: threading.Barrier) -> None:
    rng = random.Random(tid)
    kinds = sorted(PROOF_KINDS)
    try:
        start.wait()
        for n in range(JOBS_PER_THREAD):
            job = f"thread-{tid}-job-{n}"
            kind = rng.choice(kinds)
            total = rng.randint(1, 4)
            t.register_job(job, kind, total)
            ok = True
            for p in range(total):
                attempts = 0
                while True:
                    attempts += 1
                    t.partition_synth_start(job, p)
                    t.partition_synth_end(job, p)
                    w = pool.get()
                    t.partition_gpu_start(job, p, w)
                    roll = rng.random()
                    if roll < 0.55:                       # split proving: hand off, worker moves on
                        t.partition_finalize_start(job, p, w)
                        pool.put(w)
                        if rng.random() < 0.1:
                            t.partition_failed(job, p, "finalizer failed")
                            proven = False
                        else:
                            t.partition_gpu_end(job, p, w)
                            proven = True
                    elif roll < 0.8:                      # whole partition on the worker
                        t.partition_gpu_end(job, p, w)
                        pool.put(w)
                        proven = True
                    elif roll < 0.9:                      # device failure reported on the partition
                        t.partition_failed(job, p, "device failure")
                        pool.put(w)
                        proven = False
                    else:                                 # the worker itself broke and recovers
                        t.worker_error(w, "CUDA context lost")
                        t.worker_recovered(w)
                        pool.put(w)
                        proven = False
                    if proven:
                        break
                    if attempts < 2 and rng.random() < 0.5:
                        t.partition_retry(job, p)
                        continue
                    ok = False
                    break
            t.job_completed(job, ok)
            (done if ok else failed)[kind] += 1
            check_invariants(t.snapshot())        # sampled while the other threads mutate
    except BaseException as exc:  # noqa: BLE001 - surfaced by the test thread
        errors.append(exc)


def test_random_lifecycles_on_shared_workers_keep_invariants() -> None:
    t = StatusTracker(grace_secs=0.01)
    t.register_workers([(f"w{i}", i % 2) for i in range(WORKERS)])
    pool: queue.Queue = queue.Queue()
    for i in range(WORKERS):
        pool.put(f"w{i}")
    done: list[Counter] = [Counter() for _ in range(THREADS)]
    failed: list[Counter] = [Counter() for _ in range(THREADS)]
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS + 1)
    threads = [threading.Thread(target=_drive, args=(t, pool, i, done[i], failed[i], errors, start))
               for i in range(THREADS)]
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)        # switch threads often: interleave inside lifecycles
    try:
        for th in threads:
            th.start()
        start.wait()
        while any(th.is_alive() for th in threads):
            check_invariants(t.snapshot())
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(old_interval)
    assert not errors, errors

    snap = t.snapshot()
    check_invariants(snap)
    assert all(w["state"] == "idle" for w in snap["gpu_workers"])
    want_done = sum(done, Counter())
    want_failed = sum(failed, Counter())
    counters = snap["counters"]
    assert counters["completed_by_kind"] == dict(want_done)
    assert counters["failed_by_kind"] == dict(want_failed)
    assert counters["total_completed"] + counters["total_failed"] == THREADS * JOBS_PER_THREAD
    assert counters["total_failed"] > 0 and counters["total_completed"] > 0
