"""Database tallies behind the Prometheus counters and histograms: kept as the events happen.

A scrape must cost the same with ten jobs as with ten million, and a counter must survive a restart
of the process that serves it. So every path that makes a job final (the engine's settlement, the
API's cancel, expired and orphaned leases) adds one to an `OutcomeTally` row in the same place it
changes the status, and the engine's history writer adds each settled partition's phase durations
(and each finished job's wall time) to a `DurationTally` histogram. Scrapes read these few rows.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable

from django.db import transaction
from django.db.models import F

from gpu_engine.models import DurationTally, OutcomeTally

# Upper bounds (seconds) of the duration histograms; the last bucket is +Inf. From a millisecond
# PoSt partition on a GPU to a many-minute PoRep job on a CPU.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
                    600.0, 1800.0)
# The histogram's phases: the three of a partition, and a whole job (claim to stored bundle).
PHASE_SYNTHESIS, PHASE_GPU, PHASE_FINALIZE, PHASE_JOB = "synthesis", "gpu", "finalize", "job"
DURATION_PHASES = (PHASE_SYNTHESIS, PHASE_GPU, PHASE_FINALIZE, PHASE_JOB)
# A job's wait in the queue (submitted to claimed), one observation per claim: its own histogram
# (`vastmanager_queue_wait_seconds`), kept in the same table under this phase name.
PHASE_QUEUE = "queue"


def bucket_index(secs: float) -> int:
    """The histogram bucket of one observation (len(DURATION_BUCKETS) is the +Inf bucket)."""
    return bisect.bisect_left(DURATION_BUCKETS, secs)


def record_outcome(engine_id: str, proof_kind: str, outcome: str, n: int = 1) -> None:
    """Count `n` jobs of `proof_kind` that reached `outcome` (done, failed, cancelled) under `engine_id`."""
    if n <= 0:
        return
    with transaction.atomic():
        OutcomeTally.objects.bulk_create(
            [OutcomeTally(engine_id=engine_id or "", proof_kind=proof_kind, outcome=outcome)], ignore_conflicts=True)
        OutcomeTally.objects.filter(engine_id=engine_id or "", proof_kind=proof_kind, outcome=outcome).update(
            count=F("count") + n)


def record_outcomes(rows: Iterable[tuple[str, str]], outcome: str) -> None:
    """Count many jobs at once, given (engine_id, proof_kind) for each."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for engine_id, kind in rows:
        counts[(engine_id or "", kind)] += 1
    for (engine_id, kind), n in sorted(counts.items()):
        record_outcome(engine_id, kind, outcome, n)


def record_durations(observations: Iterable[tuple[str, str, str, float]]) -> None:
    """Add (engine_id, proof_kind, phase, seconds) observations to their histograms, in one transaction.

    Rows are locked (`select_for_update`, a no-op on SQLite whose IMMEDIATE transactions already
    serialize writers) so engines sharing a PostgreSQL database never lose each other's updates."""
    grouped: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for engine_id, kind, phase, secs in observations:
        if secs is not None and secs >= 0:
            grouped[(engine_id or "", kind, phase)].append(float(secs))
    if not grouped:
        return
    width = len(DURATION_BUCKETS) + 1
    with transaction.atomic():
        DurationTally.objects.bulk_create(
            [DurationTally(engine_id=e, proof_kind=k, phase=p, buckets=[0] * width) for e, k, p in grouped],
            ignore_conflicts=True)
        for (engine_id, kind, phase), values in sorted(grouped.items()):
            row = DurationTally.objects.select_for_update().get(engine_id=engine_id, proof_kind=kind, phase=phase)
            buckets = list(row.buckets or []) + [0] * max(0, width - len(row.buckets or []))
            for secs in values:
                buckets[bucket_index(secs)] += 1
            row.buckets, row.count, row.sum_secs = buckets, row.count + len(values), row.sum_secs + sum(values)
            row.save(update_fields=["buckets", "count", "sum_secs"])


def cumulative(buckets: list[int]) -> list[tuple[str, int]]:
    """(le, cumulative count) pairs for a stored histogram, ending with +Inf, as Prometheus wants."""
    out, total = [], 0
    bounds = [repr(b) for b in DURATION_BUCKETS] + ["+Inf"]
    for le, n in zip(bounds, list(buckets) + [0] * (len(bounds) - len(buckets))):
        total += int(n)
        out.append((le, total))
    return out


def record_queue_wait(engine_id: str, proof_kind: str, submitted_at, claimed_at) -> None:
    """Count one claim's wait in the queue (two aware datetimes) in the queue-wait histogram."""
    if submitted_at is not None and claimed_at is not None:
        record_durations([(engine_id, proof_kind, PHASE_QUEUE, max(0.0, (claimed_at - submitted_at).total_seconds()))])
