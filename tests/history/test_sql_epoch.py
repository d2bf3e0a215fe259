"""A datetime read as unix seconds in SQL equals Python's reading to the microsecond, on SQLite and
PostgreSQL alike: SQLite's own date functions round to the millisecond, so a time stored at
.9996 s once read a whole second late (a lane's busy share, a latency bucket off by one)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection

from gpu_engine import history_rollup
from gpu_engine.models import PartitionRun, ProofJob
from statuspanel.history.buckets import table

BASE = datetime(2026, 12, 4, 6, 47, 7, tzinfo=timezone.utc)
FRACTIONS = (0, 1, 499_999, 500_000, 999_499, 999_500, 999_600, 999_999)


@pytest.mark.django_db
@pytest.mark.parametrize("micros", FRACTIONS)
def test_epoch_in_sql_is_exact_to_the_microsecond(micros):
    job = ProofJob.objects.create(job_id=f"epoch-{micros}", proof_kind="snap-update", status="done")
    at = BASE + timedelta(microseconds=micros)
    PartitionRun.objects.create(job=job, index=0, state="done", engine_id="epoch", gpu_started_at=BASE,
                                gpu_ended_at=at, ended_at=at)
    ge, gs = history_rollup.epoch("gpu_ended_at"), history_rollup.epoch("gpu_started_at")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {ge}, {ge} - {gs} FROM {table(PartitionRun)} WHERE engine_id = %s", ["epoch"])
        read, duration = cursor.fetchone()
    assert float(read) == pytest.approx(at.timestamp(), abs=2e-6)
    assert float(duration) == pytest.approx(micros / 1e6, abs=2e-6)
