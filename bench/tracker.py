"""StatusTracker throughput and snapshot cost.

    .venv/bin/python bench/tracker.py [--seconds 2] [--threads 8]

Prints transitions/s on one thread and on N threads sharing 4 workers (split proving: the worker
is handed off at finalize_start and the partition is ended after the worker moved on), then the
time of snapshot() for 64 jobs x 16 partitions in mixed phases. Aims: >= 200,000 transitions/s on
one thread; a 1,024-partition snapshot in <= 2 ms.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpu_engine.budget import MemoryBudget
from gpu_engine.tracker import StatusTracker

PARTITIONS = 16
WORKERS = 4
# Per partition: synth_start, synth_end, gpu_start, finalize_start, gpu_end; per job: register, complete.
CALLS_PER_JOB = 5 * PARTITIONS + 2


def _run_jobs(t: StatusTracker, tid: int, deadline: float, worker_locks: list[threading.Lock],
              counts: list[int]) -> None:
    jobs = 0
    n = 0
    while time.perf_counter() < deadline:
        job = f"ps-snap-{tid}-{n}"
        n += 1
        t.register_job(job, "snap-update", PARTITIONS)
        for p in range(PARTITIONS):
            t.partition_synth_start(job, p)
            t.partition_synth_end(job, p)
            w = (tid + p) % WORKERS
            lock = worker_locks[w]
            with lock:                       # the engine gives a worker one partition at a time
                t.partition_gpu_start(job, p, w)
                t.partition_finalize_start(job, p, w)
            t.partition_gpu_end(job, p, w)   # the finalizer ends it after the worker moved on
        t.job_completed(job, True)
        jobs += 1
    counts[tid] = jobs * CALLS_PER_JOB


def transitions_per_sec(threads: int, seconds: float) -> float:
    t = StatusTracker(grace_secs=0.0)
    t.register_workers([(w, w % 2) for w in range(WORKERS)])
    locks = [threading.Lock() for _ in range(WORKERS)]
    counts = [0] * threads
    start = time.perf_counter()
    deadline = start + seconds
    if threads == 1:
        _run_jobs(t, 0, deadline, locks, counts)
    else:
        pool = [threading.Thread(target=_run_jobs, args=(t, i, deadline, locks, counts)) for i in range(threads)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
    elapsed = time.perf_counter() - start
    snap = t.snapshot()
    assert all(w["state"] == "idle" for w in snap["gpu_workers"]), "a worker was left proving"
    assert snap["counters"]["total_completed"] * CALLS_PER_JOB == sum(counts)
    return sum(counts) / elapsed


def busy_tracker(jobs: int = 64) -> StatusTracker:
    """64 jobs x 16 partitions spread over every phase, 8 workers proving."""
    budget = MemoryBudget(64 << 30)
    budget.acquire(40 << 30)
    t = StatusTracker(budget=budget, synth_max=8)
    t.register_workers([(w, w // 2) for w in range(8)])
    t.set_gpus([{"ordinal": g, "name": "NVIDIA H200", "util_pct": 90} for g in range(4)])
    free = list(range(8))
    for j in range(jobs):
        job = f"ps-snap-1000-{j}-7"
        t.register_job(job, "snap-update", PARTITIONS)
        for p in range(PARTITIONS):
            stage = (j * PARTITIONS + p) % 6
            if stage == 0:
                continue
            t.partition_synth_start(job, p)
            if stage == 1:
                continue
            t.partition_synth_end(job, p)
            if stage == 2 or not free:
                continue
            w = free.pop()
            t.partition_gpu_start(job, p, w)
            if stage == 3:
                continue
            t.partition_finalize_start(job, p, w)
            free.append(w)
            if stage == 4:
                continue
            t.partition_gpu_end(job, p, w)
    return t


def snapshot_times(runs: int) -> tuple[list[float], float, int]:
    t = busy_tracker()
    for _ in range(20):
        t.snapshot()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        t.snapshot()
        times.append((time.perf_counter() - t0) * 1000.0)
    snap = t.snapshot()
    t0 = time.perf_counter()
    text = json.dumps(snap)
    dumps_ms = (time.perf_counter() - t0) * 1000.0
    return sorted(times), dumps_ms, len(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="duration of each throughput run")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--snapshots", type=int, default=500)
    args = ap.parse_args()

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    one = transitions_per_sec(1, args.seconds)
    print(f"transitions/s, 1 thread:                      {one:12,.0f}   (aim >= 200,000)")
    many = transitions_per_sec(args.threads, args.seconds)
    print(f"transitions/s, {args.threads} threads on {WORKERS} shared workers: {many:12,.0f}")
    times, dumps_ms, size = snapshot_times(args.snapshots)
    med = statistics.median(times)
    p99 = times[int(len(times) * 0.99) - 1]
    print(f"snapshot(), 64 jobs x 16 partitions:          median {med:.3f} ms, p99 {p99:.3f} ms, "
          f"max {times[-1]:.3f} ms   (aim <= 2 ms)")
    print(f"json.dumps of that snapshot:                  {dumps_ms:.3f} ms, {size:,} bytes")


if __name__ == "__main__":
    main()
