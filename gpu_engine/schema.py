"""The snapshot as types: the contract every part reads (docs/SNAPSHOT.md, checked against it by
tests/tracker/test_schema_docs.py).

Our tracker always fills every key of these `TypedDict`s; keys marked `NotRequired` are added on the
way (the publisher's stamps, the fleet collector's `source`, a cuzk source's extras). Readers of
foreign snapshots (a cuzk daemon's document adapted by the fleet) still see these shapes, because the
fleet adapter builds them; only readers of arbitrary JSON (the WebSocket's clients, the panel's
context builders fed by a remote vastmanager) must keep checking what they get.
The key lists in `gpu_engine/vocabulary.py` are derived from these types.
"""
# No `from __future__ import annotations` here: TypedDict reads NotRequired from evaluated annotations
# (postponed ones hide it on Python 3.11), and the key lists are derived at import time.
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict


class Memory(TypedDict):
    total_bytes: int
    used_bytes: int
    available_bytes: int


class Synthesis(TypedDict):
    max_concurrent: int
    active: int


class Partition(TypedDict):
    index: int
    state: str
    synth_ms: float | None
    gpu_ms: float | None
    finalize_ms: float | None
    worker_id: int | None
    error: str | None


class Pipeline(TypedDict):
    job_id: str
    proof_kind: str
    proof_label: str
    status: str
    started_secs_ago: float
    finished_secs_ago: float | None
    total_partitions: int
    partitions_done: int
    partitions_failed: int
    partitions: list[Partition]


class GpuWorker(TypedDict):
    worker_id: int
    gpu_ordinal: int
    state: str
    current_job: str | None
    current_partition: int | None
    current_proof_kind: str | None
    current_proof_label: str | None
    busy_secs: float
    error: str | None


class Gpu(TypedDict):
    ordinal: int | None
    name: str | None
    util_pct: float | None
    mem_used_bytes: int | None
    mem_total_bytes: int | None
    temp_c: float | None
    power_w: float | None
    # A cuzk gRPC source's devices: how many workers run on it and what each proves.
    workers: NotRequired[int]
    jobs: NotRequired[list[dict[str, Any]]]


class Counters(TypedDict):
    total_completed: int
    total_failed: int
    total_cancelled: int
    completed_by_kind: dict[str, int]
    failed_by_kind: dict[str, int]
    queue_depth: int


class ConsistencyIssue(TypedDict):
    job_id: str
    partition: int | None
    worker_id: int | None
    problem: str
    message: str


class Snapshot(TypedDict):
    engine_id: str | None
    seq: int
    generated_at: str
    uptime_secs: float | None
    backend: str | None
    memory: Memory
    synthesis: Synthesis
    pipelines: list[Pipeline]
    gpu_workers: list[GpuWorker]
    gpus: list[Gpu]
    counters: Counters
    consistency: list[ConsistencyIssue]
    # Added on the way, never by the tracker.
    source: NotRequired[dict[str, Any]]
    allocations: NotRequired[dict[str, Any]]
    buffers: NotRequired[dict[str, Any]]
    queues: NotRequired[list[dict[str, Any]]]
    srs: NotRequired[list[dict[str, Any]]]
    partitions_visible: NotRequired[bool]
    published_at: NotRequired[float]
    heartbeat_secs: NotRequired[float]


class SourceSnapshot(Snapshot):
    """A fleet source's snapshot (docs/FLEET.md): a vastmanager source also names the remote engine's
    own id."""
    remote_engine_id: NotRequired[str | None]


# A snapshot as a reader of possibly foreign documents takes it (the panel's render builders): ours,
# a fleet source's, or a document read as is (a cuzk `/status` lacks keys ours always sends), so such
# a reader checks every key it reads.
SnapshotDocument = Mapping[str, Any]


def required_keys(shape: type) -> tuple[str, ...]:
    """The keys a producer always sends, in declaration order."""
    required: frozenset[str] = shape.__required_keys__  # type: ignore[attr-defined]  # any TypedDict
    return tuple(k for k in shape.__annotations__ if k in required)


# The list fields of a snapshot and the shape of their entries; the object fields and theirs.
_LISTS: dict[str, type] = {"pipelines": Pipeline, "gpu_workers": GpuWorker, "gpus": Gpu,
                           "consistency": ConsistencyIssue}
_OBJECTS: dict[str, type] = {"memory": Memory, "synthesis": Synthesis, "counters": Counters}


def conforms(snap: Any) -> bool:
    """Whether `snap` has every key the types require, at every level (not the values' types): what a
    reader that trusts the types (`/metrics`) checks once before reading, so a document written into the
    cache by something else is skipped instead of failing the whole read."""
    if not isinstance(snap, dict) or not all(k in snap for k in required_keys(Snapshot)):
        return False
    for key, shape in _OBJECTS.items():
        value = snap[key]
        if not isinstance(value, dict) or not all(k in value for k in required_keys(shape)):
            return False
    for key, shape in _LISTS.items():
        entries = snap[key]
        needed = required_keys(shape)
        if not isinstance(entries, list) or not all(isinstance(x, dict) and all(k in x for k in needed)
                                                    for x in entries):
            return False
    for pipe in snap["pipelines"]:
        parts, needed = pipe["partitions"], required_keys(Partition)
        if not isinstance(parts, list) or not all(isinstance(x, dict) and all(k in x for k in needed) for x in parts):
            return False
    return True
