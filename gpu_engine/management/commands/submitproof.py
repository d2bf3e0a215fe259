"""`manage.py submitproof --kind K [--count N] [--job-id ID] [--priority P]`: queue jobs from a shell."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from gpu_engine import queue
from gpu_engine.kinds import PROOF_KINDS


class Command(BaseCommand):
    help = "Queue proof jobs (stored before acknowledged; an existing job id is reported, not duplicated)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--kind", required=True, help=f"one of: {', '.join(PROOF_KINDS)}")
        parser.add_argument("--count", type=int, default=1, help="how many jobs (default 1)")
        parser.add_argument("--job-id", help="the job id (with --count > 1, used as a prefix: ID-1, ID-2, ...)")
        parser.add_argument("--priority", type=int, help="override the kind's priority (higher is claimed first)")

    def handle(self, *args: Any, **opts: Any) -> None:
        count = opts["count"]
        if count < 1 or count > 100_000:
            raise CommandError(f"--count must be between 1 and 100000, got {count}")
        base = opts["job_id"]
        ids: list[str | None]
        if base is None:
            ids = [None] * count
        else:
            ids = [base] if count == 1 else [f"{base}-{i}" for i in range(1, count + 1)]
        try:
            queue.validate_kind(opts["kind"])
            for job_id in ids:  # every id before the first is stored: a bad one must not leave a partial batch
                if job_id is not None:
                    queue.validate_job_id(job_id)
            for job_id in ids:
                job, created = queue.submit_job(opts["kind"], job_id, opts["priority"])
                state = "queued" if created else f"exists ({job.status})"
                self.stdout.write(f"{job.job_id}\t{job.proof_kind}\t{state}")
        except queue.JobError as exc:
            raise CommandError(str(exc)) from None
