"""Shared helpers for the engine tests: one params cache per session, an engine runner, waits."""
from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from gpu_engine.engine import Engine
from gpu_engine.engine_types import EngineConfig
from gpu_engine.models import ProofJob

_PARAMS: dict[str, Path] = {}


def shared_params_dir(tmp_path_factory) -> Path:
    """Parameters are generated once per test session (a few seconds), then read from disk."""
    if "dir" not in _PARAMS:
        _PARAMS["dir"] = tmp_path_factory.mktemp("params")
    return _PARAMS["dir"]


def make_engine(params_dir: Path, **overrides) -> Engine:
    fields = dict(engine_id="test-engine", backend="cpu", gpus=[0], workers_per_device=2, synth_workers=1,
                  params_dir=params_dir, scale=1, lease_secs=5.0, heartbeat_secs=0.2, poll_secs=0.05,
                  drain_secs=10.0, grace_secs=60.0)
    fields.update(overrides)
    return Engine(EngineConfig(**fields))


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
