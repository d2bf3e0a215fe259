"""Every snapshot the fleet collector publishes has every key of the snapshot's types
(gpu_engine/schema.py), so readers of the wire (/metrics) may read it as typed: a source never
reached, a cuzk source and a vastmanager source alike."""
from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_engine import schema
from statuspanel.fleet.poller import SourceState, decode
from statuspanel.fleet.transport import SourceConfig
from tests.fleet.cuzk_server import load_fixture
from tests.panel.helpers import busy_tracker

ENTRIES = {"pipelines": schema.Pipeline, "gpu_workers": schema.GpuWorker, "gpus": schema.Gpu,
           "consistency": schema.ConsistencyIssue}
SECTIONS = {"memory": schema.Memory, "synthesis": schema.Synthesis, "counters": schema.Counters}


def assert_has_every_typed_key(snap: dict[str, Any]) -> None:
    assert set(schema.required_keys(schema.Snapshot)) <= snap.keys()
    for key, shape in SECTIONS.items():
        assert set(shape.__annotations__) <= snap[key].keys(), key
    for key, shape in ENTRIES.items():
        for entry in snap[key]:
            assert set(shape.__annotations__) <= entry.keys(), key
    for pipe in snap["pipelines"]:
        for part in pipe["partitions"]:
            assert set(schema.Partition.__annotations__) <= part.keys()
    assert isinstance(snap["engine_id"], str) and isinstance(snap["seq"], int)
    assert isinstance(snap["generated_at"], str) and snap["generated_at"]


def state(kind: str) -> SourceState:
    return SourceState(SourceConfig(id=1, name=f"{kind}-box", kind=kind, transport="http", url="http://h:1"))


def test_a_source_never_reached_publishes_every_key() -> None:
    snap = state("cuzk").snapshot()
    assert_has_every_typed_key(snap)
    assert snap["uptime_secs"] is None and snap["backend"] is None  # nothing known yet: null, as documented


@pytest.mark.parametrize("kind", ["cuzk", "vastmanager"])
def test_a_source_that_answered_publishes_every_key(kind: str) -> None:
    doc = load_fixture() if kind == "cuzk" else busy_tracker().snapshot()
    source = state(kind)
    source.observe_ok(decode(json.dumps(doc).encode(), kind), 3.0)
    snap = source.snapshot()
    assert_has_every_typed_key(snap)
    assert snap["engine_id"] == f"{kind}-box" and snap["pipelines"]
