"""The cuzk adapter on mutated copies of the fixture: missing keys tolerated, extra keys ignored, a
wrong type is `Malformed` naming the field, and 1,024 partitions are read whole."""
from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from statuspanel.fleet.cuzk import adapt_cuzk
from statuspanel.fleet.poller import decode
from statuspanel.fleet.shape import Malformed
from tests.fleet.cuzk_server import load_fixture

FIXTURE = load_fixture()


def _paths(value: Any, path: str = "") -> list[str]:
    """Every key path of the fixture (lists: their first entry), e.g. `pipelines[0].partitions[0].gpu_ms`."""
    out = []
    if isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}" if path else key
            out.append(sub)
            out.extend(_paths(item, sub))
    elif isinstance(value, list) and value:
        out.extend(_paths(value[0], f"{path}[0]"))
    return out


def _split(path: str) -> list[str | int]:
    steps: list[str | int] = []
    for part in path.split("."):
        name, _, rest = part.partition("[")
        steps.append(name)
        if rest:
            steps.append(int(rest.rstrip("]")))
    return steps


def _mutate(path: str, action: str, value: Any = None) -> dict[str, Any]:
    doc = copy.deepcopy(FIXTURE)
    *parents, last = _split(path)
    target = doc
    for step in parents:
        target = target[step]
    if action == "delete":
        del target[last]
    else:
        target[last] = value
    return doc


REQUIRED = {"pipelines[0].job_id", "gpu_workers[0].worker_id", "allocations.srs[0].circuit_id",
            "allocations.pce[0].circuit_id"}
ALL_PATHS = _paths(FIXTURE)


@pytest.mark.parametrize("path", [p for p in ALL_PATHS if p not in REQUIRED])
def test_a_missing_optional_key_is_tolerated(path: str) -> None:
    snap = adapt_cuzk(_mutate(path, "delete"))
    assert isinstance(snap["pipelines"], list) and isinstance(snap["consistency"], list)


@pytest.mark.parametrize("path", sorted(REQUIRED))
def test_a_missing_required_key_is_malformed_and_named(path: str) -> None:
    with pytest.raises(Malformed, match=r"is missing") as info:
        adapt_cuzk(_mutate(path, "delete"))
    assert info.value.field == path


def _wrong_value(original: Any) -> Any:
    if isinstance(original, bool):
        return "yes"
    if isinstance(original, (int, float)):
        return "12"
    if isinstance(original, str):
        return 12
    if isinstance(original, list):
        return {"not": "a list"}
    return ["not", "an", "object"]


@pytest.mark.parametrize("path", ALL_PATHS)
def test_a_wrong_type_is_malformed_naming_the_field(path: str) -> None:
    *parents, last = _split(path)
    original: Any = FIXTURE
    for step in [*parents, last]:
        original = original[step]
    with pytest.raises(Malformed) as info:
        adapt_cuzk(_mutate(path, "set", _wrong_value(original)))
    assert info.value.reason == "shape"
    assert info.value.field == path, str(info.value)
    assert path in str(info.value)


@pytest.mark.parametrize("path,value", [
    ("gpu_workers[0].busy_secs", True),            # a boolean is no number
    ("memory.total_bytes", -5),
    ("pipelines[0].partitions[3].gpu_ms", 1e400),  # inf after decoding
    ("counters.completed_by_kind.snap-update", 1.5),
    ("pipelines[0].partitions[2]", "done"),
])
def test_edge_values_are_malformed(path: str, value: Any) -> None:
    with pytest.raises(Malformed) as info:
        adapt_cuzk(_mutate(path, "set", value))
    assert info.value.field == path


def test_a_document_that_is_not_an_object_is_malformed() -> None:
    for doc in ([], "status", 3, None):
        with pytest.raises(Malformed, match="must be a JSON object"):
            adapt_cuzk(doc)


def test_extra_keys_everywhere_are_ignored() -> None:
    doc = copy.deepcopy(FIXTURE)
    doc["future_top_level"] = {"x": [1, 2]}
    doc["pipelines"][0]["priority_class"] = "urgent"
    doc["pipelines"][0]["partitions"][0]["retries"] = 2
    doc["gpu_workers"][0]["pcie_gen"] = 5
    doc["allocations"]["vk"] = [{"circuit_id": "x"}]
    assert adapt_cuzk(doc)["pipelines"] == adapt_cuzk(FIXTURE)["pipelines"]


def test_null_optional_values_read_as_absent() -> None:
    doc = copy.deepcopy(FIXTURE)
    doc["memory"] = None
    doc["gpu_workers"][0]["current_job"] = None
    doc["gpu_workers"][0]["current_partition"] = None
    snap = adapt_cuzk(doc)
    assert snap["memory"]["total_bytes"] == 0
    assert snap["gpu_workers"][0]["current_job"] is None


def test_a_thousand_and_twenty_four_partitions_are_read_whole() -> None:
    doc = copy.deepcopy(FIXTURE)
    pipe = doc["pipelines"][0]
    pipe["total_partitions"] = 1024
    pipe["partitions"] = [{"index": i, "state": "done" if i < 1000 else "gpu" if i < 1002 else "pending",
                           "synth_ms": 30000 + i, "gpu_ms": 3000 + i if i < 1002 else None} for i in range(1024)]
    for worker, index in zip(doc["gpu_workers"], (1000, 1001)):
        worker["current_partition"] = index
    body = json.dumps(doc).encode()
    snap = decode(body, "cuzk")
    parts = snap["pipelines"][0]["partitions"]
    assert len(parts) == 1024 and [p["index"] for p in parts] == list(range(1024))
    assert snap["pipelines"][0]["partitions_done"] == 5  # as reported by the daemon, not recounted
    assert sum(p["state"] == "done" for p in parts) == 1000
    assert (parts[1000]["worker_id"], parts[1001]["worker_id"]) == (0, 1)
    assert snap["consistency"] == []
