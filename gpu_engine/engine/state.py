"""What the engine's threads share about the jobs it holds: claimed jobs, partitions in flight,
the GPU work queue and the stop request. Mutated only under the ledger's lock (see ledger.py)."""
from __future__ import annotations

import itertools
import logging
import queue as stdqueue
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Callable

from gpu_engine.vocabulary import CANCELLED, DONE, FAILED

log = logging.getLogger("gpu_engine.engine")

# Why a claimed job stopped short of `done`; each maps to one database action (see Engine).
STOP_FAILED = "failed"        # a partition ran out of attempts: the job fails with the error
STOP_CANCELLED = "cancelled"  # cancelled in the database: nothing to write
STOP_LOST = "lost"            # the lease is held by someone else now: nothing to write
STOP_RETURNED = "returned"    # this engine is shutting down: the job goes back to the queue


class ActiveJob:
    """A job this engine holds a lease on; mutated only under the engine's lock."""

    def __init__(self, pk: int, job_id: str, kind: str, priority: int, seq: int, total: int,
                 attempt: int = 0) -> None:
        self.pk, self.job_id, self.kind = pk, job_id, kind
        self.priority, self.seq, self.total = priority, seq, total
        self.attempt = attempt          # the job's claim number (its history rows carry it)
        self.started = time.monotonic()
        self.next_index = 0
        self.retry: list[int] = []
        self.outstanding = 0            # partitions scheduled and not yet settled (they hold budget)
        self.proofs: dict[int, Any] = {}
        self.attempts: Counter[int] = Counter()
        self.stop: tuple[str, str] | None = None   # (STOP_*, message)
        self.finishing = False
        self.sums: dict[str, float] = defaultdict(float)

    def next_partition(self) -> int | None:
        if self.stop is not None:
            return None
        if self.retry:
            return self.retry[0]
        return self.next_index if self.next_index < self.total else None

    def take(self, index: int) -> None:
        if self.retry and self.retry[0] == index:
            self.retry.pop(0)
        else:
            assert index == self.next_index
            self.next_index += 1
        self.outstanding += 1

    def unscheduled(self) -> list[int]:
        return list(self.retry) + list(range(self.next_index, self.total))

    def timings(self) -> dict[str, Any]:
        n = max(len(self.proofs), 1)
        out: dict[str, Any] = {"wall_ms": round((time.monotonic() - self.started) * 1000, 3),
                               "partitions": len(self.proofs)}
        for key, total in sorted(self.sums.items()):
            out[f"total_{key}"] = round(total, 3)
            out[f"mean_{key}"] = round(total / n, 3)
        return out


class Work:
    """One scheduled partition travelling through the pipeline, with the wall-clock (unix) start and
    end of each phase it entered: the history row, hence the panel's timeline, is built from them."""

    __slots__ = ("job", "index", "nbytes", "witness", "synth_ms", "gpu_ms", "worker_id", "gpu_ordinal",
                 "synth_started", "synth_ended", "gpu_started", "gpu_ended")

    def __init__(self, job: ActiveJob, index: int, nbytes: int) -> None:
        self.job, self.index, self.nbytes = job, index, nbytes
        self.witness: Any = None
        self.synth_ms: float | None = None
        self.gpu_ms: float | None = None
        self.worker_id: int | str = ""  # "" (as the history table keeps it) until a worker takes it
        self.gpu_ordinal: int | None = None
        self.synth_started: float | None = None
        self.synth_ended: float | None = None
        self.gpu_started: float | None = None
        self.gpu_ended: float | None = None


@dataclass
class JobEvent:
    job_id: str
    proof_kind: str
    success: bool
    wall_secs: float
    error: str = ""
    cancelled: bool = False     # stopped by a cancel: neither proved nor failed (the API's "cancelled")

    @property
    def outcome(self) -> str:
        """The job's status in the words the API, the admin and the panel use: done, failed, cancelled."""
        return DONE if self.success else CANCELLED if self.cancelled else FAILED


class WorkQueue:
    """Synthesized partitions waiting for a GPU worker: higher priority, older claim, lower index first."""

    STOP = object()

    def __init__(self) -> None:
        # (sort key, Work or STOP); a STOP's key sorts after every real work's
        self._queue: stdqueue.PriorityQueue[tuple[tuple[float, ...], Any]] = stdqueue.PriorityQueue()
        self._order = itertools.count()

    def put(self, work: Work) -> None:
        job = work.job
        self._queue.put(((-job.priority, job.seq, work.index, next(self._order)), work))

    def get(self) -> Any:
        """The next Work, or `WorkQueue.STOP` (one per worker, queued after all real work)."""
        return self._queue.get()[1]

    def stop_workers(self, count: int) -> None:
        for _ in range(count):
            self._queue.put(((float("inf"), next(self._order)), self.STOP))

    def qsize(self) -> int:
        return self._queue.qsize()


class RunState:
    """The engine's stop request, shared by every thread: draining, its deadline, and stopped;
    `fatal` is the first unexpected crash of an engine thread (the engine then stops at once)."""

    def __init__(self) -> None:
        self.draining = threading.Event()
        self.stopped = threading.Event()
        self.wake = threading.Event()     # the feeder's wake-up: a claim may be possible now
        self.deadline = float("inf")
        self.fatal: str | None = None
        self._fatal_lock = threading.Lock()

    def crash(self, thread: str, exc: BaseException) -> None:
        """An engine thread died of `exc`: remember the first such error and stop without draining."""
        with self._fatal_lock:
            if self.fatal is None:
                self.fatal = f"engine thread {thread!r} crashed: {type(exc).__name__}: {exc}"
        self.request_stop(0.0)

    def request_stop(self, drain_secs: float) -> None:
        self.deadline = min(self.deadline, time.monotonic() + drain_secs)
        self.draining.set()
        self.wake.set()

    def past_deadline(self, grace: float = 0.0) -> bool:
        return self.draining.is_set() and time.monotonic() >= self.deadline + grace


def guarded(run: RunState, name: str, target: Callable[[], None]) -> Callable[[], None]:
    """`target` for a thread: an exception escaping it is an engine crash (logged, recorded in
    `run.fatal`, the engine stops and returns its jobs), never a thread that silently vanishes."""

    def body() -> None:
        try:
            target()
        except BaseException as exc:  # whatever ends the thread must end the engine
            log.critical("engine thread %s crashed", name, exc_info=True)
            run.crash(name, exc)

    return body
