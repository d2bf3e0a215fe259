"""What circuit registration and circuit jobs leave on disk, removed when nothing needs it any more.

- Staging folders (`CIRCUITS_DIR/.staging-*`): a registration copies its uploads there while it
  validates them, holding an exclusive `flock` on the folder's lock file. A folder whose lock can
  be taken belongs to no live registration (a `kill -9` left it): it goes.
- Job items (`CIRCUITS_DIR/jobs/<uuid>/`): a finished job (done, failed, cancelled) keeps its
  stored witnesses or inputs for CIRCUIT_ITEMS_RETENTION_DAYS after it finished, then they go
  and its row says so (`items_dir` empty; a requeue of it then fails with that reason).
- Orphan item folders: a submit killed between writing its items and storing its row leaves a
  folder no row names; one older than ORPHAN_GRACE_SECS (far longer than any submit) goes.

`housekeep()` does all three; the engine runs it when it starts and with its hourly prune, and a
registration sweeps stale staging folders before it stages its own.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from django.conf import settings

from gpu_engine.circom import registry
from gpu_engine.circom.jobs import JOBS_SUBDIR
from gpu_engine.models import FINAL_STATUSES, CircuitJob

log = logging.getLogger(__name__)

STAGING_PREFIX = ".staging-"
STAGING_LOCK = ".lock"
# A staging folder without its lock file yet is only that young for a moment (mkdtemp, then open).
UNLOCKED_STAGING_GRACE_SECS = 3600.0
ORPHAN_GRACE_SECS = 6 * 3600.0


@dataclass
class Swept:
    staging: int = 0
    items: int = 0
    orphans: int = 0

    def __bool__(self) -> bool:
        return bool(self.staging or self.items or self.orphans)


def lock_staging(folder: Path) -> int:
    """Take the staging folder's lock for this registration; the fd is the lock (closing releases it)."""
    fd = os.open(folder / STAGING_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _staging_abandoned(folder: Path, now: float) -> bool:
    lock = folder / STAGING_LOCK
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        with contextlib.suppress(FileNotFoundError):
            return now - folder.stat().st_mtime > UNLOCKED_STAGING_GRACE_SECS
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False  # a registration is using it
        raise
    finally:
        os.close(fd)
    return True


def sweep_staging(root: Path | None = None, now: float | None = None) -> int:
    """Remove the staging folders no live registration holds; how many."""
    root = registry.circuits_dir() if root is None else root
    now = time.time() if now is None else now
    removed = 0
    if not root.is_dir():
        return 0
    for folder in root.glob(f"{STAGING_PREFIX}*"):
        if folder.is_dir() and _staging_abandoned(folder, now):
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def retention_days() -> float:
    return float(settings.CIRCUIT_ITEMS_RETENTION_DAYS)


def prune_items(now: datetime | None = None, days: float | None = None) -> int:
    """Remove the items of circuit jobs finished more than `days` ago; how many jobs' items."""
    days = retention_days() if days is None else days
    cutoff = (now or datetime.now(timezone.utc)) - timedelta(days=days)
    expired = (CircuitJob.objects.exclude(items_dir="")
               .filter(job__status__in=list(FINAL_STATUSES), job__finished_at__lt=cutoff))
    count = 0
    for cj in expired.only("pk", "items_dir"):
        shutil.rmtree(registry.circuits_dir() / cj.items_dir, ignore_errors=True)
        CircuitJob.objects.filter(pk=cj.pk).update(items_dir="")
        count += 1
    return count


def remove_orphans(now: float | None = None, grace_secs: float = ORPHAN_GRACE_SECS) -> int:
    """Remove item folders that no job row names and that are older than `grace_secs`; how many."""
    jobs = registry.circuits_dir() / JOBS_SUBDIR
    if not jobs.is_dir():
        return 0
    now = time.time() if now is None else now
    candidates = []
    for folder in jobs.iterdir():
        try:
            if folder.is_dir() and now - folder.stat().st_mtime > grace_secs:
                candidates.append(folder)
        except FileNotFoundError:
            continue
    if not candidates:
        return 0
    named = set(CircuitJob.objects.filter(items_dir__in=[f"{JOBS_SUBDIR}/{f.name}" for f in candidates])
                .values_list("items_dir", flat=True))
    removed = 0
    for folder in candidates:
        if f"{JOBS_SUBDIR}/{folder.name}" not in named:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def housekeep() -> Swept:
    """All of the above, logged when anything was removed."""
    swept = Swept(staging=sweep_staging(), items=prune_items(), orphans=remove_orphans())
    if swept:
        log.info("circuit housekeeping: removed %d staging folder(s), the items of %d finished job(s) (older "
                 "than %s days), %d orphan item folder(s)", swept.staging, swept.items, retention_days(),
                 swept.orphans)
    return swept


def housekeep_quietly() -> None:
    """`housekeep()` for the engine (at start, hourly): a failure is logged, never fatal."""
    try:
        housekeep()
    except Exception:
        log.exception("circuit housekeeping failed")
