"""`runprover --demo`: keep a mixed stream of jobs queued, with ids shaped like Curio's task ids.

So a new user sees proofs being made (and the panel moving) without writing a client first.
"""
from __future__ import annotations

import itertools
import logging
import random
import threading

from django.db import connection

from gpu_engine import queue
from gpu_engine.kinds import get_kind

log = logging.getLogger(__name__)

# (kind, weight): mostly sealing work, with the PoSt kinds that jump the queue now and then.
DEMO_MIX = (("snap-update", 3), ("porep-c2", 3), ("window-post", 2), ("winning-post", 1))
# Demo jobs sit below user work: each at its kind's priority less this, so among themselves the kinds
# keep their order while any job submitted at a default priority (0 and up) is claimed before them.
DEMO_PRIORITY_DROP = 100


def demo_priority(kind: str) -> int:
    return get_kind(kind).priority - DEMO_PRIORITY_DROP


def demo_job_id(kind: str, rng: random.Random, task: int) -> str:
    miner = rng.choice((1000, 1001, 2024, 31337))
    if kind == "snap-update":
        return f"ps-snap-{miner}-{rng.randrange(1, 5000)}-{task}"
    if kind == "porep-c2":
        return f"ps-porep-{miner}-{rng.randrange(1, 5000)}-{task}"
    if kind == "window-post":
        return f"wdpost-{miner}-{rng.randrange(48)}-{task}"
    return f"winpost-{miner}-{rng.randrange(1, 10**7)}-{task}"


class DemoFeeder:
    """A thread that tops the queue up to `depth` queued jobs every `interval` seconds."""

    def __init__(self, depth: int = 4, interval: float = 1.0, seed: int | None = None) -> None:
        if depth < 1:
            raise ValueError("demo queue depth must be >= 1")
        self.depth, self.interval = depth, interval
        self._rng = random.Random(seed)
        self._tasks = itertools.count(self._rng.randrange(1000, 9000))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo-feeder", daemon=True)
        self.submitted = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def top_up(self) -> int:
        kinds = [k for k, _ in DEMO_MIX]
        weights = [w for _, w in DEMO_MIX]
        added = 0
        for _ in range(max(0, self.depth - queue.queue_depth())):
            kind = self._rng.choices(kinds, weights)[0]
            _, created = queue.submit_job(kind, demo_job_id(kind, self._rng, next(self._tasks)), demo_priority(kind))
            added += int(created)
        self.submitted += added
        return added

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self.top_up()
                except Exception:  # the demo must not take the engine down
                    log.exception("demo feeder could not submit")
                    connection.close()
                self._stop.wait(self.interval)
        finally:
            connection.close()
