"""One evaluator per deployment: a lease held in one database row.

Every dashboard process runs an evaluator thread; only the lease holder evaluates and delivers. The
holder renews every tick; a holder that dies (SIGKILL, a lost host) stops renewing and its lease
expires after `ttl` seconds, when another process takes it with one conditional UPDATE (atomic on
SQLite and PostgreSQL alike). Writes that must never be made by two holders (alert transitions,
notices handed to a delivery) run in `fenced()`: a transaction that first renews the lease and is
rolled back when the lease is no longer ours; on PostgreSQL the renewal's row lock also keeps a
would-be successor waiting until that transaction is committed.
"""
from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone

from django.db import IntegrityError, transaction

from statuspanel.alerts.models import EvaluatorLease

LEASE_NAME = "evaluator"
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class LeaseLost(Exception):
    """The lease passed to another process: this one's writes were rolled back."""


class Lease:
    def __init__(self, ttl: float = 5.0, name: str = LEASE_NAME, holder: str | None = None) -> None:
        self.ttl = ttl
        self.name = name
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"[:200]

    def acquire_or_renew(self) -> bool:
        """Renew the lease if ours, take it if expired; whether we hold it now."""
        now = _now()
        rows = EvaluatorLease.objects.filter(name=self.name)
        if rows.filter(holder=self.holder).update(expires_at=now + timedelta(seconds=self.ttl)):
            return True
        if rows.filter(expires_at__lt=now).update(holder=self.holder, expires_at=now + timedelta(seconds=self.ttl),
                                                 acquired_at=now):
            return True
        if not rows.exists():
            try:
                with transaction.atomic():
                    EvaluatorLease.objects.create(name=self.name, holder=self.holder, acquired_at=now,
                                                  expires_at=now + timedelta(seconds=self.ttl))
                return True
            except IntegrityError:  # another process created it first
                return False
        return False

    def release(self) -> None:
        """Give the lease up now (a clean stop): a successor need not wait for it to expire."""
        EvaluatorLease.objects.filter(name=self.name, holder=self.holder).update(expires_at=EPOCH)

    def current_holder(self) -> str | None:
        row = EvaluatorLease.objects.filter(name=self.name, expires_at__gte=_now()).values_list("holder", flat=True)
        return row.first()

    @contextmanager
    def fenced(self) -> Iterator[None]:
        """A transaction that is ours only while the lease is: renews it first, LeaseLost if lost."""
        with transaction.atomic():
            now = _now()
            if not EvaluatorLease.objects.filter(name=self.name, holder=self.holder, expires_at__gt=now).update(
                    expires_at=now + timedelta(seconds=self.ttl)):
                raise LeaseLost(f"the {self.name} lease is no longer held by {self.holder}")
            yield


def _now() -> datetime:
    return datetime.now(timezone.utc)
