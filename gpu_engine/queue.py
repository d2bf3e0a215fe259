"""The durable queue: submission, atomic claims, leases, and the guarded status changes.

Every state change of a claimed job is a conditional UPDATE that names the engine holding the
lease, so an engine whose lease was taken over (it stalled, another engine re-claimed the job)
can never overwrite the newer owner's result: a job ends with exactly one bundle.
"""
from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any, Iterable

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from gpu_engine.kinds import get_kind
from gpu_engine.models import FINAL_STATUSES, JobStatus, ProofJob
from gpu_engine.tallies import record_outcomes, record_queue_wait
from gpu_engine.validation import (  # noqa: F401 - re-exported
    JOB_ID_RE,
    PRIORITY_MAX,
    PRIORITY_MIN,
    JobError,
    row_problem,
    validate_job_id,
    validate_kind,
    validate_priority,
)

CLAIM_ORDER = ("-priority", "submitted_at", "id")


def max_attempts() -> int:
    return int(settings.JOB_MAX_ATTEMPTS)


def new_job_id(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex[:16]}"


def submit_job(proof_kind: Any, job_id: Any = None, priority: Any = None) -> tuple[ProofJob, bool]:
    """Store a job (queued) and return it with `created`; the same id again returns the stored job.

    Idempotent like a request id: resubmitting an id with a different kind is a conflict (409),
    since answering with a job of another kind would hide a caller's bug.
    """
    kind = get_kind(validate_kind(proof_kind))  # a circuit's job carries its witnesses: gpu_engine.circom.jobs
    jid = new_job_id(kind.name) if job_id is None else validate_job_id(job_id)
    prio = kind.priority if priority is None else validate_priority(priority)
    existing = ProofJob.objects.filter(job_id=jid).first()
    if existing is None:
        try:
            with transaction.atomic():
                job = ProofJob.objects.create(
                    job_id=jid, proof_kind=kind.name, priority=prio, total_partitions=kind.partitions
                )
            return job, True
        except IntegrityError:
            existing = ProofJob.objects.get(job_id=jid)
    if existing.proof_kind != kind.name:
        raise JobError(f"job {jid!r} already exists with proof kind {existing.proof_kind!r}", status=409)
    return existing, False


def claim_next(engine_id: str, lease_secs: float | None = None) -> ProofJob | None:
    """Atomically take the best queued job (priority, then age) for `engine_id`, or None."""
    lease = float(lease_secs if lease_secs is not None else settings.JOB_LEASE_SECS)
    if connection.features.has_select_for_update_skip_locked:
        job = _claim_skip_locked(engine_id, lease)
    else:
        job = _claim_conditional(engine_id, lease)
    if job is not None:
        record_queue_wait(engine_id, job.proof_kind, job.submitted_at, job.claimed_at)
    return job


def _claim_fields(engine_id: str, lease: float) -> dict[str, Any]:
    now = timezone.now()
    return {
        "status": JobStatus.RUNNING,
        "claimed_by": engine_id,
        "claimed_at": now,
        "started_at": now,
        "lease_expires_at": now + timedelta(seconds=lease),
        "attempts": F("attempts") + 1,
        "error": "",
    }


def _claim_skip_locked(engine_id: str, lease: float) -> ProofJob | None:
    """PostgreSQL: lock the first unlocked queued row; concurrent claimers skip it."""
    with transaction.atomic():
        pk = (
            ProofJob.objects.select_for_update(skip_locked=True)
            .filter(status=JobStatus.QUEUED)
            .order_by(*CLAIM_ORDER)
            .values_list("pk", flat=True)
            .first()
        )
        if pk is None:
            return None
        ProofJob.objects.filter(pk=pk).update(**_claim_fields(engine_id, lease))
    return ProofJob.objects.get(pk=pk)


def _claim_conditional(engine_id: str, lease: float) -> ProofJob | None:
    """SQLite: UPDATE ... WHERE status='queued' on a candidate; a lost race moves to the next one."""
    for _ in range(5):
        candidates = list(
            ProofJob.objects.filter(status=JobStatus.QUEUED).order_by(*CLAIM_ORDER).values_list("pk", flat=True)[:8]
        )
        if not candidates:
            return None
        for pk in candidates:
            if ProofJob.objects.filter(pk=pk, status=JobStatus.QUEUED).update(**_claim_fields(engine_id, lease)):
                return ProofJob.objects.get(pk=pk)
    return None


def renew_leases(engine_id: str, pks: Iterable[int], lease_secs: float | None = None) -> set[int]:
    """Extend the leases this engine still holds; return the pks it no longer holds (cancelled, lost)."""
    pks = set(pks)
    if not pks:
        return set()
    lease = float(lease_secs if lease_secs is not None else settings.JOB_LEASE_SECS)
    held = ProofJob.objects.filter(pk__in=pks, status=JobStatus.RUNNING, claimed_by=engine_id)
    held.update(lease_expires_at=timezone.now() + timedelta(seconds=lease))
    still = set(
        ProofJob.objects.filter(pk__in=pks, status=JobStatus.RUNNING, claimed_by=engine_id).values_list("pk", flat=True)
    )
    return pks - still


def _finalize(rows, outcome: str, **fields: Any) -> int:
    """UPDATE `rows` to the final status `outcome` and count them in the outcome tallies, together
    (PostgreSQL locks the rows first, so a concurrent change cannot make the count differ)."""
    with transaction.atomic():
        if connection.features.has_select_for_update:
            rows = rows.select_for_update()
        changed = list(rows.values_list("pk", "claimed_by", "proof_kind"))
        if not changed:
            return 0
        n = ProofJob.objects.filter(pk__in=[pk for pk, _, _ in changed]).update(status=outcome, **fields)
        record_outcomes([(engine, kind) for _, engine, kind in changed], outcome)
        return n


def requeue_expired(now=None) -> tuple[int, int]:
    """Put running jobs whose lease ran out back in the queue, or fail those out of attempts.

    Returns (requeued, failed). Each row is changed by an UPDATE that re-checks the expiry, so a
    lease renewed in between is left alone.
    """
    now = now or timezone.now()
    limit = max_attempts()
    requeued = failed = 0
    expired = ProofJob.objects.filter(status=JobStatus.RUNNING, lease_expires_at__lt=now)
    for pk, attempts, owner in expired.values_list("pk", "attempts", "claimed_by"):
        guard = ProofJob.objects.filter(pk=pk, status=JobStatus.RUNNING, lease_expires_at__lt=now)
        if attempts >= limit:
            failed += _finalize(
                guard, JobStatus.FAILED,
                finished_at=now,
                lease_expires_at=None,
                error=f"lease of engine {owner!r} expired on attempt {attempts} of {limit}; giving up",
            )
        else:
            requeued += guard.update(status=JobStatus.QUEUED, claimed_by="", lease_expires_at=None)
    return requeued, failed


def requeue_orphans(engine_id: str) -> tuple[int, int]:
    """At startup: jobs still marked as claimed by this engine id belong to a previous life of it
    (killed without returning them). Requeue them at once instead of waiting for their leases,
    applying the same attempt limit as expired leases. Returns (requeued, failed)."""
    now = timezone.now()
    limit = max_attempts()
    mine = ProofJob.objects.filter(status=JobStatus.RUNNING, claimed_by=engine_id)
    failed = _finalize(
        mine.filter(attempts__gte=limit), JobStatus.FAILED, finished_at=now, lease_expires_at=None,
        error=f"engine {engine_id!r} restarted while holding the job on attempt {limit} of {limit}; giving up",
    )
    requeued = mine.update(status=JobStatus.QUEUED, claimed_by="", lease_expires_at=None)
    return requeued, failed


def complete_job(pk: int, engine_id: str, bundle: dict, timings: dict[str, Any], *, vk_fingerprint: str = "") -> bool:
    """Store the verified bundle and mark the job done, only if `engine_id` still holds it;
    `vk_fingerprint` names the key it was proved under."""
    return bool(
        _finalize(
            ProofJob.objects.filter(pk=pk, status=JobStatus.RUNNING, claimed_by=engine_id), JobStatus.DONE,
            bundle=bundle,
            verified=True,
            vk_fingerprint=vk_fingerprint,
            timings=timings,
            finished_at=timezone.now(),
            lease_expires_at=None,
            error="",
        )
    )


def fail_job(pk: int, engine_id: str, error: str, timings: dict[str, Any] | None = None) -> bool:
    fields: dict[str, Any] = {
        "error": error,
        "finished_at": timezone.now(),
        "lease_expires_at": None,
    }
    if timings is not None:
        fields["timings"] = timings
    return bool(_finalize(ProofJob.objects.filter(pk=pk, status=JobStatus.RUNNING, claimed_by=engine_id),
                          JobStatus.FAILED, **fields))


def return_job(pk: int, engine_id: str) -> bool:
    """Give a claimed job back unproved (graceful shutdown); the attempt does not count."""
    return bool(
        ProofJob.objects.filter(pk=pk, status=JobStatus.RUNNING, claimed_by=engine_id).update(
            status=JobStatus.QUEUED,
            claimed_by="",
            lease_expires_at=None,
            attempts=F("attempts") - 1,
        )
    )


def requeue_failed(pks: Iterable[int]) -> tuple[int, int, list[tuple[str, str]]]:
    """Put failed jobs back in the queue as new (the admin's requeue): (requeued, skipped as not
    failed, [(job_id, reason)] refused because the row breaks the job rules and could never be proved)."""
    rows = ProofJob.objects.filter(pk__in=list(pks)).values_list("pk", "job_id", "proof_kind", "priority", "status")
    sound, skipped, refused = [], 0, []
    for pk, job_id, kind, priority, status in rows:
        if status != JobStatus.FAILED:
            skipped += 1
        elif (reason := row_problem(kind, job_id, priority)) is not None:
            refused.append((job_id, reason))
        else:
            sound.append(pk)
    # Conditional on the status, so a job an engine is touching right now is never overwritten.
    n = ProofJob.objects.filter(pk__in=sound, status=JobStatus.FAILED).update(
        status=JobStatus.QUEUED, claimed_by="", claimed_at=None, started_at=None, finished_at=None,
        lease_expires_at=None, error="", attempts=0, bundle=None, verified=False, timings={}, vk_fingerprint="")
    return n, skipped + len(sound) - n, refused


def cancel_job(job_id: str) -> ProofJob:
    """Cancel a queued or running job (a running engine notices at its next heartbeat)."""
    job = ProofJob.objects.filter(job_id=job_id).first()
    if job is None:
        raise JobError(f"no job with id {job_id!r}", status=404)
    updated = _finalize(ProofJob.objects.filter(pk=job.pk, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]),
                        JobStatus.CANCELLED, finished_at=timezone.now(), lease_expires_at=None, error="cancelled")
    job.refresh_from_db()
    if not updated and job.status != JobStatus.CANCELLED:
        raise JobError(f"job {job_id!r} is already {job.status}; only queued or running jobs can be cancelled", 409)
    return job


def queue_depth() -> int:
    return ProofJob.objects.filter(status=JobStatus.QUEUED).count()


def is_final(status: str) -> bool:
    return status in FINAL_STATUSES
