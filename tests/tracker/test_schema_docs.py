"""docs/SNAPSHOT.md and gpu_engine/schema.py say the same: every table of the document lists exactly
the keys of its TypedDict, and the tracker's own snapshot has every required key."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpu_engine import schema

DOC = Path(__file__).resolve().parents[2] / "docs" / "SNAPSHOT.md"
SECTIONS = {
    "Top level": schema.Snapshot,
    "`memory`": schema.Memory,
    "`synthesis`": schema.Synthesis,
    "`pipelines[]`": schema.Pipeline,
    "`pipelines[].partitions[]`": schema.Partition,
    "`gpu_workers[]`": schema.GpuWorker,
    "`gpus[]`": schema.Gpu,
    "`counters`": schema.Counters,
    "`consistency[]`": schema.ConsistencyIssue,
}


def documented_keys() -> dict[str, set[str]]:
    """Section heading -> the backticked names in the first column of its table."""
    keys: dict[str, set[str]] = {}
    heading = None
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
            keys.setdefault(heading, set())
        elif heading and line.startswith("| `"):
            first_cell = line.split("|")[1]
            keys[heading] |= set(re.findall(r"`([a-z_]+)`", first_cell))
    return keys


@pytest.mark.parametrize("heading,shape", SECTIONS.items(), ids=list(SECTIONS))
def test_each_documented_table_lists_exactly_its_types_keys(heading, shape):
    assert documented_keys()[heading] == set(shape.__annotations__)


def test_optional_top_level_keys_are_the_ones_added_on_the_way():
    assert schema.Snapshot.__optional_keys__ == {"source", "allocations", "buffers", "queues", "srs",
                                                 "partitions_visible", "published_at", "heartbeat_secs"}


def test_tracker_snapshot_has_every_required_key_of_every_shape():
    from tests.panel.helpers import busy_tracker

    snap = busy_tracker().snapshot()
    assert set(schema.required_keys(schema.Snapshot)) <= snap.keys()
    for pipe in snap["pipelines"]:
        assert set(schema.Pipeline.__annotations__) <= pipe.keys()
        for part in pipe["partitions"]:
            assert set(schema.Partition.__annotations__) <= part.keys()
    for worker in snap["gpu_workers"]:
        assert set(schema.GpuWorker.__annotations__) <= worker.keys()
    assert set(schema.Counters.__annotations__) <= snap["counters"].keys()
    assert set(schema.Memory.__annotations__) <= snap["memory"].keys()
