"""The collector's side of the Source table: read the enabled sources, keep state changes (in batches,
from statuspanel/fleet/events.py), pin host keys.

These run in the collector's worker threads (never on its event loop) and close their database
connection when done, so a thread pool holds no connection between polls.
"""
from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

from django.db import connection, transaction

from statuspanel.fleet.events import StateChange
from statuspanel.fleet.transport import SourceConfig

log = logging.getLogger(__name__)


def load_sources() -> list[SourceConfig]:
    """Every enabled source as plain data (the token included: it is sent, never shown)."""
    from django.conf import settings

    from statuspanel.models import Source

    allow_link_local = bool(getattr(settings, "FLEET_ALLOW_LINK_LOCAL", False))
    try:
        return [
            SourceConfig(
                id=s.id, name=s.name, kind=s.kind, transport=s.transport, url=s.url, ssh_user=s.ssh_user,
                ssh_host=s.ssh_host, ssh_port=s.ssh_port, ssh_key_path=s.ssh_key_path,
                known_hosts_policy=s.known_hosts_policy, known_hosts_path=s.known_hosts_path,
                ssh_host_key=s.ssh_host_key, remote_port=s.remote_port, token=s.token,
                interval_secs=s.interval_secs, allow_link_local=allow_link_local, grpc_target=s.grpc_target,
                grpc_tls=s.grpc_tls, grpc_ca_path=s.grpc_ca_path)
            for s in Source.objects.filter(enabled=True).order_by("name")
        ]
    finally:
        connection.close()


def record_state_changes(events: list[StateChange], current: list[StateChange]) -> None:
    """Keep a batch of state changes (SourceEvent rows) and each source's latest state on its row:
    one transaction, a handful of queries however many changes gathered."""
    from statuspanel.models import Source, SourceEvent

    ids = {c.source_id for c in events} | {c.source_id for c in current}
    try:
        with transaction.atomic():
            existing = set(Source.objects.filter(id__in=ids).values_list("id", flat=True))
            SourceEvent.objects.bulk_create([
                SourceEvent(source_id=c.source_id if c.source_id in existing else None, source_name=c.name,
                            at=datetime.fromtimestamp(c.at, timezone.utc), previous=c.previous, state=c.state,
                            reason=c.reason, error=c.error[:500])
                for c in events])
            rows = [Source(id=c.source_id, state=c.state, state_since=datetime.fromtimestamp(c.at, timezone.utc),
                           last_error=c.error[:500]) for c in current if c.source_id in existing]
            Source.objects.bulk_update(rows, ["state", "state_since", "last_error"], batch_size=500)
    finally:
        connection.close()


def pin_host_key(source_id: int, key: str) -> None:
    """The pin policy's first use: keep the host key seen, unless one was pinned meanwhile."""
    from statuspanel.models import Source

    try:
        Source.objects.filter(id=source_id, ssh_host_key="").update(ssh_host_key=key)
        log.info("fleet source %s: ssh host key pinned on first use", source_id)
    finally:
        connection.close()


def prune_events(days: float, now: datetime | None = None) -> int:
    """Drop state changes older than `days` (a source that flaps all day writes thousands); how many."""
    from statuspanel.models import SourceEvent

    horizon = (now or datetime.now(timezone.utc)) - timedelta(days=days)
    try:
        deleted, _ = SourceEvent.objects.filter(at__lt=horizon).delete()
        return deleted
    finally:
        connection.close()
