"""GetStatus / GetMetrics -> the panel's snapshot: worker entries grouped into devices, VRAM (0 total =
unknown), jobs, queues, SRS tiers, observed busy time; contradictions and bad metrics text are
`malformed` with the field named; the merged engine keeps HTTP's pipelines and workers."""
from __future__ import annotations

import json

import pytest

from statuspanel.fleet.cuzk import adapt_cuzk
from statuspanel.fleet.cuzk_grpc import proving_pb2 as pb
from statuspanel.fleet.cuzk_grpc.adapt import (
    MAX_ENTRIES,
    adapt_status,
    check_entry_counts,
    grpc_only_snapshot,
    merge,
    message_dict,
    metrics_by_kind,
)
from statuspanel.fleet.shape import Malformed
from tests.fleet.cuzk_grpc_server import GPU_NAME, VRAM_TOTAL, script_metrics, script_status
from tests.fleet.cuzk_server import FIXTURE


def _part(message, busy_since=None, now=0.0):
    return adapt_status(message_dict(message), busy_since, now)


def test_two_workers_on_one_gpu_are_one_device_with_their_jobs() -> None:
    part = _part(script_status(1))
    assert len(part["gpus"]) == 1
    gpu = part["gpus"][0]
    assert (gpu["name"], gpu["mem_total_bytes"], gpu["mem_used_bytes"], gpu["workers"]) == \
        (GPU_NAME, VRAM_TOTAL, VRAM_TOTAL - 2_000_000_000, 2)
    assert [(j["worker_id"], j["job_id"], j["proof_kind"]) for j in gpu["jobs"]] == \
        [(0, "porep-c2-1001", "porep-c2"), (1, "snap-2002", "snap-update")]
    assert gpu["jobs"][0]["proof_label"] == "PoRep Commit 2 (SealCommit)"
    assert [(w["worker_id"], w["gpu_ordinal"], w["state"]) for w in part["gpu_workers"]] == \
        [(0, 0, "proving"), (1, 0, "proving")]
    assert part["queues"] == [
        {"proof_kind": "porep-c2", "proof_label": "PoRep Commit 2 (SealCommit)", "pending": 2, "in_progress": 1},
        {"proof_kind": "snap-update", "proof_label": "SnapDeals Update (ReplicaUpdate)", "pending": 1,
         "in_progress": 1}]
    assert part["queue_depth"] == 3 and part["uptime_secs"] == 3601.0


def test_unknown_vram_and_an_empty_status_read_as_absent() -> None:
    part = _part(pb.GetStatusResponse(gpus=[pb.GPUStatus(ordinal=3)]))
    assert part["gpus"][0]["name"] == "GPU 3"  # cuzk's own fallback name when it is empty
    assert part["gpus"][0]["mem_total_bytes"] is None and part["gpus"][0]["mem_used_bytes"] is None
    empty = _part(pb.GetStatusResponse())
    assert empty["gpus"] == [] and empty["queues"] == [] and empty["srs"] == [] and empty["total_completed"] == 0


def test_srs_tiers_by_name_and_an_unknown_tier_shown_whole() -> None:
    part = _part(pb.GetStatusResponse(loaded_srs=[
        pb.SRSStatus(circuit_id="porep-32g"), pb.SRSStatus(circuit_id="wpost-32g", tier=1, size_bytes=5, ref_count=2),
        pb.SRSStatus(circuit_id="snap-32g", tier=2), pb.SRSStatus(circuit_id="new-32g", tier=7)]))
    assert [(s["circuit_id"], s["tier"], s["size_bytes"], s["ref_count"]) for s in part["srs"]] == [
        ("porep-32g", "hot", None, 0), ("wpost-32g", "warm", 5, 2), ("snap-32g", "cold", None, 0),
        ("new-32g", "tier 7", None, 0)]


@pytest.mark.parametrize("message,field", [
    (pb.GetStatusResponse(gpus=[pb.GPUStatus(), pb.GPUStatus(vram_total_bytes=10, vram_free_bytes=11)]),
     "gpus[1].vram_free_bytes"),
    (pb.GetStatusResponse(loaded_srs=[pb.SRSStatus(tier=0)]), "loaded_srs[0].circuit_id"),
])
def test_a_contradiction_is_malformed_naming_the_field(message, field) -> None:
    with pytest.raises(Malformed) as caught:
        _part(message)
    assert caught.value.field == field and field in str(caught.value)


def test_busy_time_is_observed_from_the_first_poll_that_saw_the_job() -> None:
    since: dict = {}
    first = _part(script_status(0), since, now=100.0)
    assert first["gpu_workers"][0]["busy_secs"] == 0.0
    later = _part(script_status(1), since, now=103.5)
    assert later["gpu_workers"][0]["busy_secs"] == 3.5  # the same job on worker 0
    assert later["gpu_workers"][1]["busy_secs"] == 0.0  # a job first seen now
    idle = _part(script_status(3), since, now=104.0)
    assert [w["busy_secs"] for w in idle["gpu_workers"]] == [0.0, 0.0] and since == {}


def test_metrics_give_the_counts_per_kind() -> None:
    assert metrics_by_kind(script_metrics(5)) == {"completed": {"porep-c2": 5, "snap-update": 5},
                                                   "failed": {"porep-c2": 1}}
    snap = grpc_only_snapshot(_part(script_status(5)), metrics_by_kind(script_metrics(5)))
    assert snap["counters"]["completed_by_kind"] == {"porep-c2": 5, "snap-update": 5}
    assert snap["counters"]["total_completed"] == 10 and snap["partitions_visible"] is False


@pytest.mark.parametrize("text,field", [
    ("cuzk_proofs_completed{proof_kind=\"porep-c2\"} -1\n", 'GetMetrics.cuzk_proofs_completed{proof_kind="porep-c2"}'),
    ("cuzk_proofs_failed{proof_kind=\"porep-c2\"} 1.5\n", 'GetMetrics.cuzk_proofs_failed{proof_kind="porep-c2"}'),
    ("cuzk_proofs_completed{proof_kind=porep} 1\n", "GetMetrics.prometheus_text"),
])
def test_bad_metrics_text_is_malformed_naming_the_sample(text, field) -> None:
    with pytest.raises(Malformed) as caught:
        metrics_by_kind(text)
    assert caught.value.field == field


def test_the_merged_engine_keeps_http_pipelines_and_workers() -> None:
    http = adapt_cuzk(json.loads(FIXTURE.read_text()))
    http["gpus"] = [{"ordinal": 0, "name": None, "util_pct": 87.0, "mem_used_bytes": None, "mem_total_bytes": None,
                     "temp_c": 61, "power_w": 300.0}]
    snap = merge(http, _part(script_status(1)))
    assert snap["pipelines"] == http["pipelines"] and snap["gpu_workers"] == http["gpu_workers"]
    gpu = snap["gpus"][0]
    assert (gpu["name"], gpu["mem_total_bytes"], gpu["util_pct"], gpu["temp_c"]) == (GPU_NAME, VRAM_TOTAL, 87.0, 61)
    assert snap["queues"] and snap["srs"] and snap["partitions_visible"] is True


@pytest.mark.parametrize("name,entry", [("gpus", pb.GPUStatus()), ("queues", pb.QueueStatus()),
                                        ("loaded_srs", pb.SRSStatus(circuit_id="c"))])
def test_lists_up_to_the_entry_cap_are_read_and_longer_ones_refused(name, entry) -> None:
    at_cap = pb.GetStatusResponse(**{name: [entry] * MAX_ENTRIES})
    check_entry_counts(at_cap)
    with pytest.raises(Malformed) as caught:
        check_entry_counts(pb.GetStatusResponse(**{name: [entry] * (MAX_ENTRIES + 1)}))
    assert caught.value.reason == "too-large" and caught.value.field == name
