"""Plain helpers of the engine tests (the engine factory is the `make_engine` fixture): run, wait, check."""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterator

from gpu_engine.engine import Engine
from gpu_engine.models import ProofJob


@contextmanager
def running(engine: Engine) -> Iterator[Engine]:
    engine.start()
    try:
        yield engine
    finally:
        assert engine.stop(timeout=60), "engine did not stop"


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def all_final(job_ids: list[str]) -> bool:
    return not ProofJob.objects.filter(job_id__in=job_ids, status__in=["queued", "running"]).exists()
