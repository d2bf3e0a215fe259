"""The hourly telemetry prune never runs on the heartbeat's thread: a prune slower than a lease
leaves the lease renewals on time (the prune runs in batches on the history writer)."""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from gpu_engine import queue
from gpu_engine.engine import rollup
from gpu_engine.models import TelemetryMinute
from tests.engine.helpers import running, wait_for

SLOW_PRUNE_SECS = 3.0  # longer than the test engine's 2 s lease


@pytest.mark.django_db(transaction=True)
def test_slow_prune_does_not_delay_lease_renewal(make_engine, monkeypatch):
    old = datetime.now(timezone.utc) - timedelta(days=30)
    TelemetryMinute.objects.create(engine_id="test-engine", minute=old, gpu_ordinal=0, samples=1)
    renewals: list[float] = []
    pruned: list[float] = []
    real_renew, real_prune = queue.renew_leases, rollup.prune
    real_batch = getattr(rollup, "prune_batch", None)

    def timed_renew(*args, **kwargs):
        renewals.append(time.monotonic())
        return real_renew(*args, **kwargs)

    def slowly(real):
        def slow(*args, **kwargs):
            time.sleep(SLOW_PRUNE_SECS)
            n = real(*args, **kwargs)
            pruned.append(time.monotonic())
            return n
        return slow

    monkeypatch.setattr(queue, "renew_leases", timed_renew)
    # Slow whichever way the prune runs: whole, or batch by batch.
    monkeypatch.setattr(rollup, "prune", slowly(real_prune))
    monkeypatch.setattr(rollup, "prune_batch", slowly(real_batch), raising=False)
    engine = make_engine(lease_secs=2.0, heartbeat_secs=0.2)
    with running(engine):
        wait_for(lambda: bool(pruned), timeout=30)
        during = [t for t in renewals if t <= pruned[0]]
    gaps = [b - a for a, b in zip(during, during[1:])]
    assert len(during) >= 8, renewals  # the heartbeat kept beating through the prune
    assert max(gaps) < 1.0, gaps
    assert not TelemetryMinute.objects.filter(minute__lt=old + timedelta(minutes=1)).exists()


@pytest.mark.django_db(transaction=True)
def test_prune_deletes_in_batches(monkeypatch):
    monkeypatch.setattr(rollup, "PRUNE_BATCH", 3)
    old = datetime.now(timezone.utc) - timedelta(days=30)
    TelemetryMinute.objects.bulk_create([TelemetryMinute(engine_id="e", minute=old + timedelta(minutes=i),
                                                         gpu_ordinal=0, samples=1) for i in range(7)])
    TelemetryMinute.objects.create(engine_id="e", minute=datetime.now(timezone.utc), gpu_ordinal=0, samples=1)
    assert rollup.prune() == 7
    assert TelemetryMinute.objects.count() == 1
