"""manage.py prunehistory: drop telemetry minutes past their retention (and, on request, old partition runs).

A running engine prunes the telemetry rollups itself once an hour; this command is for hosts whose
engines are stopped, for a cron job, and for partition runs, which are never pruned automatically
(they are the proof history an operator may want to keep)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from django.core.management.base import BaseCommand, CommandError

from gpu_engine.engine.rollup import prune, retention_days
from gpu_engine.models import PartitionRun


def _days(value: str) -> float:
    try:
        days = float(value)
    except ValueError:
        raise CommandError(f"days must be a number, not {value!r}") from None
    if not days >= 0 or days == float("inf"):
        raise CommandError(f"days must be a finite number >= 0, not {value!r}")
    return days


class Command(BaseCommand):
    help = "Delete telemetry rollups older than TELEMETRY_RETENTION_DAYS and, with --runs-days, old partition runs."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--telemetry-days", default=None,
                            help="keep this many days of telemetry minutes (default TELEMETRY_RETENTION_DAYS)")
        parser.add_argument("--runs-days", default=None,
                            help="also delete partition runs that settled more than this many days ago")

    def handle(self, *args, **opts) -> None:
        days = retention_days() if opts["telemetry_days"] is None else _days(opts["telemetry_days"])
        n = prune(days)
        self.stdout.write(f"telemetry: deleted {n} minute row(s) older than {days:g} day(s)")
        if opts["runs_days"] is not None:
            runs_days = _days(opts["runs_days"])
            cutoff = datetime.now(timezone.utc) - timedelta(days=runs_days)
            deleted, _ = PartitionRun.objects.filter(ended_at__lt=cutoff).delete()
            self.stdout.write(f"partition runs: deleted {deleted} row(s) settled more than {runs_days:g} day(s) ago")
