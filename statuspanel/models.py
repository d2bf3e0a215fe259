"""Fleet sources: the remote engines this dashboard watches, and every change of their state.

A `Source` is managed in the admin and with `addsource` / `listsources` / `removesource`; the
collector (statuspanel/fleet/) re-reads the table while it runs. Its token is a secret: the admin
never shows it back, no snapshot carries it and nothing logs it. `SourceEvent` keeps each state
change, so "when did host X drop" has an answer after the fact (it outlives a removed source).
"""
from __future__ import annotations

from django.db import models

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
