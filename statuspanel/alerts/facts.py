"""What the database adds to the snapshots: the queue, recent failures, repeated claims, local
engines' heartbeats and each kind's and phase's p95 over 24 h.

A few indexed queries per evaluation; the p95s (a scan of a day's partition runs) are refreshed at
most once a minute by the evaluator (`P95_REFRESH_SECS`).
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta, timezone

from django.db.models import Count, Min

from gpu_engine.models import EngineHost, JobStatus, PartitionRun, PartitionState, ProofJob
from statuspanel.alerts.rules import Failure, Requeue

P95_REFRESH_SECS = 60.0
P95_WINDOW = timedelta(hours=24)
P95_MAX_SAMPLES = 50_000  # the newest attempts of the day
ENGINE_FORGET = timedelta(hours=24)
PHASE_COLUMNS = {"synthesizing": "synth_ms", "gpu": "gpu_ms", "finalizing": "finalize_ms"}


def _ts(value: datetime) -> float:
    return value.timestamp()


def queue(now: datetime) -> tuple[dict[str, int], dict[str, tuple[str, float]]]:
    """Queued jobs by kind, and each kind's oldest queued job with its age in seconds."""
    counts = dict(ProofJob.objects.filter(status=JobStatus.QUEUED).values_list("proof_kind")
                  .annotate(n=Count("id")).values_list("proof_kind", "n"))
    oldest: dict[str, tuple[str, float]] = {}
    firsts = (ProofJob.objects.filter(status=JobStatus.QUEUED).values("proof_kind")
              .annotate(first=Min("submitted_at")).values_list("proof_kind", "first"))
    for kind, first in firsts:
        job = (ProofJob.objects.filter(status=JobStatus.QUEUED, proof_kind=kind, submitted_at=first)
               .values_list("job_id", flat=True).first())
        if job is not None:
            oldest[kind] = (job, (now - first).total_seconds())
    return counts, oldest


def failures(now: datetime, window_secs: float) -> dict[str, list[Failure]]:
    """Failed jobs and failed partition attempts of each engine within the window, newest last."""
    since = now - timedelta(seconds=window_secs)
    out: dict[str, list[Failure]] = defaultdict(list)
    jobs = (ProofJob.objects.filter(status=JobStatus.FAILED, finished_at__gte=since)
            .values_list("claimed_by", "job_id", "error", "finished_at").order_by("finished_at")[:1000])
    failed_jobs = set()
    for engine, job_id, error, at in jobs:
        failed_jobs.add(job_id)
        if at is None:  # not after the filter on finished_at; the column is nullable
            continue
        out[engine or "?"].append(Failure(_ts(at), f"job {job_id}", _short(error)))
    runs = (PartitionRun.objects.filter(state=PartitionState.FAILED, ended_at__gte=since)
            .values_list("engine_id", "job__job_id", "index", "error", "ended_at").order_by("ended_at")[:1000])
    for engine, job_id, index, error, at in runs:
        if job_id in failed_jobs or at is None:  # a failed job's failing partition is one failure, not two
            continue
        out[engine or "?"].append(Failure(_ts(at), f"{job_id}#{index}", _short(error)))
    return dict(out)


def requeues(min_attempts: int) -> list[Requeue]:
    """Jobs not finished after `min_attempts` claims, with their last errors."""
    out = []
    rows = (ProofJob.objects.filter(status__in=(JobStatus.QUEUED, JobStatus.RUNNING), attempts__gte=min_attempts)
            .order_by("-attempts", "submitted_at").values_list("pk", "job_id", "claimed_by", "attempts", "error")[:100])
    for pk, job_id, engine, attempts, error in rows:
        errors = [_short(e) for e in PartitionRun.objects.filter(job_id=pk).exclude(error="")
                  .order_by("-recorded_at").values_list("error", flat=True)[:3]]
        if error:
            errors.insert(0, _short(error))
        out.append(Requeue(job_id, engine, attempts, tuple(dict.fromkeys(errors))[:3]))
    return out


def heartbeat_ages(now: datetime) -> dict[str, float]:
    """Seconds since the last heartbeat of every local engine not stopped cleanly, heard from within
    ENGINE_FORGET: an engine dead for longer is history, not news (its alert resolves then)."""
    rows = EngineHost.objects.filter(stopped_at__isnull=True, last_heartbeat__gte=now - ENGINE_FORGET)
    return {engine: (now - beat).total_seconds() for engine, beat in rows.values_list("engine_id", "last_heartbeat")}


def phase_p95(now: datetime) -> dict[tuple[str, str], float]:
    """(kind, phase) -> p95 seconds of the phase over 24 h, from proven partition attempts (one query,
    the newest P95_MAX_SAMPLES attempts)."""
    samples: dict[tuple[str, str], list[float]] = defaultdict(list)
    rows = (PartitionRun.objects.filter(state=PartitionState.DONE, ended_at__gte=now - P95_WINDOW)
            .order_by("-ended_at").values_list("proof_kind", *PHASE_COLUMNS.values())[:P95_MAX_SAMPLES])
    for kind, *durations in rows:
        for phase, ms in zip(PHASE_COLUMNS, durations):
            if ms is not None:
                samples[(kind, phase)].append(ms)
    return {key: percentile(sorted(values), 0.95) / 1000.0 for key, values in samples.items()}


def percentile(sorted_values: list[float], q: float) -> float:
    """The nearest-rank percentile of sorted values."""
    index = max(0, min(len(sorted_values) - 1, int(round(q * len(sorted_values) + 0.5)) - 1))
    return sorted_values[index]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _short(text: str, limit: int = 160) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
