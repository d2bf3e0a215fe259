"""Cost of a local engine, priced by ENGINE_PRICE_PER_HOUR: busy half its watched time, from its own
history (telemetry minutes, partition runs, done jobs), computed here independently."""
from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from gpu_engine.models import PartitionRun, ProofJob, TelemetryMinute
from statuspanel.fleet import cost

pytestmark = pytest.mark.django_db
ENGINE = "local-gpu-box"


def _at(t: float) -> datetime:
    return datetime.fromtimestamp(t, timezone.utc)


def test_a_local_engine_busy_half_its_watched_time(settings) -> None:
    settings.ENGINE_PRICE_PER_HOUR = f"other-engine=9,{ENGINE}=6"
    now = time.time()
    minute0 = now - now % 60 - 15 * 60
    TelemetryMinute.objects.bulk_create(
        [TelemetryMinute(engine_id=ENGINE, minute=_at(minute0 + 60 * m), gpu_ordinal=o, samples=30)
         for m in range(10) for o in (TelemetryMinute.ENGINE_ROW, 0)])
    job = ProofJob.objects.create(job_id="j", proof_kind="porep-c2", status="done", claimed_by=ENGINE,
                                  finished_at=_at(minute0 + 590))
    ProofJob.objects.bulk_create([ProofJob(job_id=f"j{i}", proof_kind="porep-c2", status="done", claimed_by=ENGINE,
                                           finished_at=_at(minute0 + 30 * i)) for i in range(19)])
    # 60 partitions of 5 s on the GPU's one worker: 300 s busy of 600 s watched
    PartitionRun.objects.bulk_create([
        PartitionRun(job=job, index=i, state="done", gpu_ms=5000, worker_id="0", gpu_ordinal=0, engine_id=ENGINE,
                     proof_kind="porep-c2", gpu_started_at=_at(minute0 + 10 * i),
                     gpu_ended_at=_at(minute0 + 10 * i + 5), ended_at=_at(minute0 + 10 * i + 5)) for i in range(60)])
    report = cost.build_report([ENGINE], now=now)
    spent = 6.0 * 600 / 3600
    for window in cost.WINDOWS:
        box = report["boxes"][ENGINE][window]
        assert box["busy_share"] == pytest.approx(0.5)
        assert box["spent"] == pytest.approx(spent)
        assert box["idle_cost"] == pytest.approx(spent / 2)
        assert box["cost_per_proof"] == pytest.approx({"porep-c2": spent / 20})
        assert report["fleet"][window]["cost_per_proof"] == pytest.approx({"porep-c2": spent / 20})
