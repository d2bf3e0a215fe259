"""Fleet sources: the remote engines this dashboard watches, and every change of their state.

A `Source` is managed in the admin and with `addsource` / `listsources` / `removesource`; the
collector (statuspanel/fleet/) re-reads the table while it runs. Its token is a secret: the admin
never shows it back, no snapshot carries it and nothing logs it. `SourceEvent` keeps each state
change, so "when did host X drop" has an answer after the fact (it outlives a removed source).
"""
from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models.signals import post_delete
from django.dispatch import receiver

from statuspanel.fleet.vocabulary import SOURCE_KINDS, SOURCE_STATES, SOURCE_TRANSPORTS

DEFAULT_INTERVAL_SECS = 1.5
KNOWN_HOSTS_STRICT = "strict"   # the host key must be in the known-hosts file
KNOWN_HOSTS_PIN = "pin"         # the first key seen is pinned; a different one later is refused
KNOWN_HOSTS_OFF = "off"         # no check (a lab network only)
KNOWN_HOSTS_POLICIES = (KNOWN_HOSTS_STRICT, KNOWN_HOSTS_PIN, KNOWN_HOSTS_OFF)


def _choices(values: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


class Source(models.Model):
    name = models.CharField(max_length=64, unique=True, help_text="shown as the engine's id in the panel")
    kind = models.CharField(max_length=16, choices=_choices(SOURCE_KINDS))
    transport = models.CharField(max_length=8, choices=_choices(SOURCE_TRANSPORTS), default="http")
    url = models.CharField(max_length=500, blank=True, default="",
                           help_text="http(s) transport: the engine's base URL, or the status URL itself")
    ssh_user = models.CharField(max_length=64, blank=True, default="")
    ssh_host = models.CharField(max_length=255, blank=True, default="")
    ssh_port = models.PositiveIntegerField(default=22)
    ssh_key_path = models.CharField(max_length=500, blank=True, default="",
                                    help_text="private key file on this dashboard host")
    known_hosts_policy = models.CharField(max_length=8, choices=_choices(KNOWN_HOSTS_POLICIES),
                                          default=KNOWN_HOSTS_PIN)
    known_hosts_path = models.CharField(max_length=500, blank=True, default="",
                                        help_text="strict policy: known-hosts file (default ~/.ssh/known_hosts)")
    ssh_host_key = models.TextField(blank=True, default="", help_text="pin policy: the host key pinned on first use")
    remote_port = models.PositiveIntegerField(null=True, blank=True,
                                              help_text="ssh transport: the status port on the remote host")
    token = models.CharField(max_length=512, blank=True, default="")  # write-only: see SourceAdmin
    grpc_target = models.CharField(max_length=300, blank=True, default="",
                                   help_text="cuzk only: its gRPC API as HOST:PORT (ssh: as the remote host "
                                             "reaches it, e.g. 127.0.0.1:9820); with or without the HTTP status")
    grpc_tls = models.BooleanField(default=False, help_text="gRPC over TLS (http transport only)")
    grpc_ca_path = models.CharField(max_length=500, blank=True, default="",
                                    help_text="gRPC TLS: a CA bundle on this host (default: the system's roots)")
    interval_secs = models.FloatField(default=DEFAULT_INTERVAL_SECS)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # What the collector last saw (kept here so listsources and the admin show it without the panel).
    state = models.CharField(max_length=16, choices=_choices(SOURCE_STATES), blank=True, default="")
    state_since = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True, default="")
    # What the box costs per hour it is rented (in settings.PRICE_CURRENCY); empty: busy share only.
    price_per_hour = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True,
                                         help_text="hourly price of the box (PRICE_CURRENCY); empty: no cost shown")

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name

    def target(self) -> str:
        """Where it is polled, without secrets: the URL, or user@host:port -> remote port; and the gRPC API."""
        scheme = "grpcs" if self.grpc_tls else "grpc"
        grpc = f"{scheme}://{self.grpc_target}" if self.grpc_target else ""
        if self.transport == "ssh":
            remote = [f"127.0.0.1:{self.remote_port}"] if self.remote_port is not None else []
            return f"{self.ssh_user}@{self.ssh_host}:{self.ssh_port} -> {' + '.join(remote + ([grpc] if grpc else []))}"
        return " + ".join(part for part in (self.url, grpc) if part)


class SourceEvent(models.Model):
    source = models.ForeignKey(Source, null=True, on_delete=models.SET_NULL, related_name="events")
    source_name = models.CharField(max_length=64, db_index=True)  # kept when the source is removed
    at = models.DateTimeField(db_index=True)
    previous = models.CharField(max_length=16, blank=True, default="")
    state = models.CharField(max_length=16, choices=_choices(SOURCE_STATES))
    reason = models.CharField(max_length=32, blank=True, default="")
    error = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        ordering = ("-at", "-id")
        indexes = [models.Index(fields=["source_name", "at"], name="sourceevent_name_at")]

    def __str__(self) -> str:
        return f"{self.source_name}: {self.previous or '-'} -> {self.state} at {self.at:%Y-%m-%d %H:%M:%S}"


class FleetMinute(models.Model):
    """One minute of a fleet engine as its polls saw it (statuspanel/fleet/history.py writes them).

    `lane` "" is the engine row (proofs completed and failed by kind from counter deltas, daemon
    restarts seen, partitions seen finishing); `w<id>` is one GPU worker, `gpu<n>` one GPU (busy
    while any of its workers is). `spans` are the busy stretches at poll resolution, in seconds
    from the minute's start. A minute may have more than one row per lane (a collector restart
    within it): readers sum them."""

    ENGINE_LANE = ""

    source_name = models.CharField(max_length=64)
    minute = models.DateTimeField(help_text="Start of the minute (UTC).")
    lane = models.CharField(max_length=32, blank=True, default="")
    gpu_ordinal = models.IntegerField(null=True, blank=True)
    observed_secs = models.FloatField(default=0.0)
    busy_secs = models.FloatField(default=0.0)
    spans = models.JSONField(default=list, blank=True)
    completed = models.JSONField(default=dict, blank=True)
    failed = models.JSONField(default=dict, blank=True)
    restarts = models.PositiveSmallIntegerField(default=0)
    partitions = models.JSONField(default=list, blank=True, help_text="[kind, synth_ms, gpu_ms, ended_secs]")
    gpu_secs_by_kind = models.JSONField(default=dict, blank=True,
                                        help_text="the partitions' GPU seconds by kind (the cost report's weights)")

    class Meta:
        indexes = [models.Index(fields=["source_name", "minute"], name="fleetminute_source_minute"),
                   models.Index(fields=["minute"], name="fleetminute_minute")]

    def __str__(self) -> str:
        return f"{self.source_name} {self.lane or 'engine'} {self.minute:%Y-%m-%d %H:%M}"


@receiver(post_delete, sender=Source)
def _forget_removed_source(sender: type[Source], instance: Source, **kwargs: Any) -> None:
    """A removed source leaves no series in /metrics: its tallies go with it (its minutes age out)."""
    from gpu_engine.models import DurationTally, OutcomeTally

    OutcomeTally.objects.filter(engine_id=instance.name).delete()
    DurationTally.objects.filter(engine_id=instance.name).delete()
