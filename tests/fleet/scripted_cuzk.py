"""A cuzk daemon doing scripted work, polled for real by the collector, with a clock the test moves.

Poll n (the n-th request the stand-in server answers) is taken at `t0 + STEP_SECS * n` on the
history's clock: 21 polls are ten minutes of observation, done in a few real seconds. The script:
worker 0 proves at even polls and idles at odd ones, worker 1 (same GPU) idles throughout, so GPU 0
is busy half the time; the daemon completes PROOFS_PER_POLL snap-update proofs between polls and
fails a window-post proof every fifth poll; at RESTART_AT it restarts (counters and uptime back
near zero) and goes on. One job's partitions finish one per poll at the start.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

POLLS = 21
STEP_SECS = 30.0
RESTART_AT = 11
PROOFS_PER_POLL = 3
PARTITIONS = 4
PART_GPU_MS, PART_SYNTH_MS = 500, 1000


def since_start(n: int) -> int:
    """Polls since the daemon's last start, at poll n."""
    return n if n < RESTART_AT else n - RESTART_AT + 1


def document(n: int) -> dict[str, Any]:
    n = min(n, POLLS)  # past the script: the daemon stands still
    k = since_start(n)
    return {
        "uptime_secs": 10.0 * k,
        "gpu_workers": [
            {"worker_id": 0, "gpu_ordinal": 0, "state": "proving" if n % 2 == 0 else "idle",
             "current_job": "j1" if n % 2 == 0 else None, "current_partition": 0 if n % 2 == 0 else None},
            {"worker_id": 1, "gpu_ordinal": 0, "state": "idle"},
        ],
        "pipelines": [{"job_id": "j1", "proof_kind": "snap-update", "total_partitions": PARTITIONS,
                       "partitions": [{"index": i, "state": "done" if i < n else "synthesizing",
                                       "synth_ms": PART_SYNTH_MS, "gpu_ms": PART_GPU_MS if i < n else None}
                                      for i in range(PARTITIONS)]}],
        "counters": {"total_completed": PROOFS_PER_POLL * k, "total_failed": k // 5,
                     "completed_by_kind": {"snap-update": PROOFS_PER_POLL * k},
                     "failed_by_kind": {"window-post": k // 5} if k // 5 else {}, "queue_depth": 1},
    }


@dataclass
class Expected:
    """What the daemon did between the first poll and the last, computed from the script (not the panel)."""

    completed: int
    failed: int
    busy_share: float
    observed_secs: float
    partitions: int


def expected() -> Expected:
    completed = failed = 0
    for n in range(2, POLLS + 1):
        if since_start(n) == 1:  # restarted: everything since is new
            completed += document(n)["counters"]["total_completed"]
            failed += document(n)["counters"]["total_failed"]
        else:
            completed += document(n)["counters"]["total_completed"] - document(n - 1)["counters"]["total_completed"]
            failed += document(n)["counters"]["total_failed"] - document(n - 1)["counters"]["total_failed"]
    busy_polls = sum(1 for n in range(2, POLLS + 1) if n % 2 == 0)
    return Expected(completed=completed, failed=failed, busy_share=busy_polls / (POLLS - 1),
                    observed_secs=STEP_SECS * (POLLS - 1), partitions=PARTITIONS - 1)


def run_scenario(name: str, price: str | None = None) -> float:
    """Add a source `name` for a scripted server, collect all POLLS polls, stop; returns t0 (the first minute)."""
    from statuspanel.fleet.collector import FleetCollector
    from statuspanel.fleet.history import FleetHistory
    from statuspanel.models import Source
    from tests.fleet.conftest import wait_until
    from tests.fleet.cuzk_server import CuzkServer

    now = time.time()
    t0 = now - now % 60 - 12 * 60          # a whole minute, the ten observed minutes well before now
    with CuzkServer("scripted", script=document) as server:
        Source.objects.create(name=name, kind="cuzk", url=server.url, interval_secs=0.1,
                              price_per_hour=price)
        history = FleetHistory(clock=lambda: t0 + STEP_SECS * min(server.requests, POLLS), flush_secs=0.1,
                               max_gap_secs=STEP_SECS * 2)
        collector = FleetCollector(reload_secs=0.2, history=history).start()
        try:
            wait_until(lambda: server.requests > POLLS + 2, 30, "the scripted polls")
        finally:
            collector.stop()
    return t0
