"""End to end in one process: every kind proved on the CPU backend, bundles verify, history matches."""
from __future__ import annotations

import pytest

from gpu_engine import queue
from gpu_engine.groth16.api import verify_bundle
from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.models import EngineHost, PartitionRun, ProofJob
from tests.engine.helpers import all_final, running, wait_for


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_every_kind_is_proved_verified_and_recorded(make_engine):
    job_ids = [queue.submit_job(kind, f"e2e-{kind}")[0].job_id for kind in PROOF_KINDS]
    engine = make_engine()
    events = []
    engine.add_listener(events.append)
    with running(engine):
        wait_for(lambda: all_final(job_ids), timeout=120)
        engine.history.flush(10)
    for kind in PROOF_KINDS:
        job = ProofJob.objects.get(job_id=f"e2e-{kind}")
        assert job.status == "done", job.error
        assert job.verified and job.bundle is not None
        vk = engine.params[kind].vk  # the engine's own key, not the one inside the bundle
        results = verify_bundle(job.bundle, vk)
        assert job.vk_fingerprint == job.bundle["vk_fingerprint"] == vk.fingerprint()
        assert len(results) == PROOF_KINDS[kind].partitions
        assert all(ok for _, ok in results)
        runs = list(PartitionRun.objects.filter(job=job).order_by("index"))
        assert [r.index for r in runs] == list(range(PROOF_KINDS[kind].partitions))
        assert all(r.state == "done" and r.attempt == job.attempts == 1 and r.engine_id == "test-engine" and r.worker_id.isdigit()
                   and r.gpu_ordinal == 0 and r.synth_ms > 0 and r.gpu_ms > 0 and r.finalize_ms > 0 for r in runs)
        assert job.timings["partitions"] == PROOF_KINDS[kind].partitions
        for key in ("mean_synthesis_ms", "mean_ntt_ms", "mean_msm_g1_ms", "mean_msm_g2_ms", "mean_gpu_ms"):
            assert job.timings[key] > 0
        assert job.claimed_by == "test-engine" and job.attempts == 1 and job.finished_at >= job.started_at
    assert sorted(e.job_id for e in events if e.success) == sorted(job_ids)
    snap = engine.tracker.snapshot()
    assert snap["counters"]["total_completed"] == len(PROOF_KINDS)
    assert snap["counters"]["total_failed"] == 0
    assert all(w["state"] == "idle" for w in snap["gpu_workers"])
    assert engine.budget.used_bytes == 0
    host = EngineHost.objects.get(engine_id="test-engine")
    assert host.backend == "cpu" and host.workers == 2 and host.stopped_at is not None


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_budget_of_one_partition_still_proves(make_engine):
    probe = make_engine()
    probe.prepare()
    one = max(probe.part_bytes.values())
    queue.submit_job("porep-c2", "tight-budget")
    engine = make_engine(memory_budget=one)
    peak = []
    with running(engine):
        wait_for(lambda: (peak.append(engine.budget.used_bytes) or all_final(["tight-budget"])), timeout=120)
    assert ProofJob.objects.get(job_id="tight-budget").status == "done"
    assert max(peak) <= one
