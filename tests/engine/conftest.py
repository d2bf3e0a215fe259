"""The engine tests: real CPU engines over the session's shared parameter directory."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from gpu_engine.engine import Engine, EngineConfig


@pytest.fixture
def make_engine(params_dir: Path) -> Callable[..., Engine]:
    """Build an engine with small, fast test settings; keyword arguments override any field."""

    def make(**overrides) -> Engine:
        fields = dict(engine_id="test-engine", backend="cpu", gpus=[0], workers_per_device=2, synth_workers=1,
                      params_dir=params_dir, scale=1, lease_secs=5.0, heartbeat_secs=0.2, poll_secs=0.05,
                      drain_secs=10.0, grace_secs=60.0)
        fields.update(overrides)
        return Engine(EngineConfig(**fields))

    return make
