"""The hourly prune (in batches on the history writer) drops the history rollup's periods wholly
before the retention together with the telemetry minutes, and keeps the hour that reaches past it
(the 7 d chart starts at the top of that hour)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from gpu_engine import history_rollup
from gpu_engine.engine import rollup
from gpu_engine.models import HistoryRollup


@pytest.mark.django_db
def test_prune_drops_rollup_periods_past_retention_in_batches(monkeypatch):
    now = datetime(2026, 12, 3, 12, 30, tzinfo=timezone.utc)
    cutoff = now - timedelta(days=7)
    hours = [cutoff - timedelta(hours=h) for h in range(1, 30)]  # 29 hours wholly before the cutoff
    kept = [history_rollup.period_start(t, 3600) for t in (cutoff, cutoff + timedelta(hours=2))]
    HistoryRollup.objects.bulk_create([
        HistoryRollup(engine_id="e", span_secs=3600, measure="done", period=history_rollup.period_start(p, 3600),
                      proof_kind="porep-c2", bucket=0, count=1) for p in hours + kept])
    monkeypatch.setattr(rollup, "PRUNE_BATCH", 7)
    steps = rollup.RollupWriter(rollup.MinuteRollup("e"))._prune_steps(cutoff)
    calls = 1
    while steps():
        calls += 1
    assert calls == 5  # 29 rows, 7 a step
    assert sorted(HistoryRollup.objects.values_list("period", flat=True)) == sorted(kept)
