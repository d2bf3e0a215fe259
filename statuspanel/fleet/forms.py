"""The one rule set of a fleet Source, used by the admin and by `addsource` alike.

`SourceForm` validates every field and their combinations (an http source has a URL and no ssh
fields; an ssh source has user, host, key file and remote port and no URL; a vastmanager source
has a token). The token is write-only: never rendered back, kept when left empty on an edit of
the same target, removed with `clear_token` or when the URL, the ssh host or port, or the
transport changes (a token goes only where it was given for: re-pointing a source needs it given
again). Link-local and cloud-metadata targets are refused unless FLEET_ALLOW_LINK_LOCAL is set
(statuspanel/fleet/targets.py; the collector checks resolved addresses again at every poll).
`parse_ssh_target("user@host[:port]")` is the one reading of the `--ssh` argument.
"""
from __future__ import annotations

import math
import os
import re
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from gpu_engine import runtime, wire
from gpu_engine.wire import validate_engine_id
from statuspanel.fleet.targets import ALLOW_SETTING, literal_problem, refusal
from statuspanel.fleet.vocabulary import SOURCE_KINDS, SOURCE_TRANSPORTS
from statuspanel.models import DEFAULT_INTERVAL_SECS, KNOWN_HOSTS_POLICIES, Source

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$")
HOST_RE = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]{0,253}[A-Za-z0-9])?)$")
USER_RE = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._-]{0,63}$")
MIN_INTERVAL_SECS = 0.2
MAX_INTERVAL_SECS = 3600.0
MIN_TOKEN_CHARS = 16


def parse_ssh_target(value: str) -> tuple[str, str, int]:
    """`user@host[:port]` -> (user, host, port); IPv6 hosts in brackets (`user@[::1]:2222`)."""
    user, at, rest = (value or "").partition("@")
    if not at or not user or not rest:
        raise ValidationError(f"ssh target {value!r} must look like user@host or user@host:port")
    port = 22
    if rest.startswith("["):
        host, _, tail = rest.partition("]")
        host += "]"
        if tail:
            if not tail.startswith(":"):
                raise ValidationError(f"ssh target {value!r}: expected :port after the bracketed host")
            port = _port(tail[1:], "ssh port")
    elif rest.count(":") == 1:
        host, _, raw = rest.partition(":")
        port = _port(raw, "ssh port")
    else:
        host = rest
    return user, host.strip("[]") if host.startswith("[") else host, port


def _port(raw: str, what: str) -> int:
    if not raw.isdigit() or not 1 <= int(raw) <= 65535:
        raise ValidationError(f"{what} must be a number from 1 to 65535, got {raw!r}")
    return int(raw)


def _is_local_engine(name: str) -> bool:
    """Whether an engine publishing itself (this process's, or one sharing the cache) is called `name`:
    a source of the same name would overwrite its snapshots."""
    if runtime.local_engine_id() == name:
        return True
    snap = wire.default_cache().get(wire.snapshot_key(name))
    return isinstance(snap, dict) and not isinstance(snap.get("source"), dict)


# The stubs' generic ModelForm, which Django's own class is not at run time.
if TYPE_CHECKING:
    _SourceModelForm = forms.ModelForm[Source]
else:
    _SourceModelForm = forms.ModelForm


class SourceForm(_SourceModelForm):
    token = forms.CharField(required=False, strip=True, max_length=512,
                            widget=forms.PasswordInput(render_value=False),
                            help_text="bearer token sent to the source; write-only (left empty on an edit, "
                                      "the current one is kept, unless the URL or ssh host changes: then it "
                                      "must be given again)")
    clear_token = forms.BooleanField(required=False, help_text="remove the stored token")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initial["token"] = ""             # never sent back to a browser
        self.fields["ssh_port"].required = False
        self.fields["interval_secs"].required = False
        self.fields["transport"].required = False

    class Meta:
        model = Source
        fields = ("name", "kind", "transport", "url", "ssh_user", "ssh_host", "ssh_port", "ssh_key_path",
                  "known_hosts_policy", "known_hosts_path", "remote_port", "token", "interval_secs", "enabled",
                  "grpc_target", "grpc_tls", "grpc_ca_path", "price_per_hour")

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"].strip()
        if not NAME_RE.match(name):
            raise ValidationError("name: 1-64 letters, digits and . _ : @ - (it becomes the engine id), "
                                  f"got {name!r}")
        try:
            validate_engine_id(name)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        if _is_local_engine(name):
            raise ValidationError(f"{name!r} is the id of an engine that publishes itself here; "
                                  "a source needs a name of its own")
        return name

    def clean_interval_secs(self) -> float:
        value: float | None = self.cleaned_data.get("interval_secs")
        if value is None:
            return DEFAULT_INTERVAL_SECS
        if value is None or not math.isfinite(value) or not MIN_INTERVAL_SECS <= value <= MAX_INTERVAL_SECS:
            raise ValidationError(f"interval must be between {MIN_INTERVAL_SECS} and {MAX_INTERVAL_SECS:.0f} "
                                  f"seconds, got {value!r}")
        return value

    def clean_price_per_hour(self) -> Decimal | None:
        value: Decimal | None = self.cleaned_data.get("price_per_hour")
        if value is not None and value < 0:
            raise ValidationError(f"price per hour must be 0 or more (empty: no price), got {value}")
        return value

    def clean_transport(self) -> str:
        transport: str = self.cleaned_data.get("transport") or "http"
        return transport

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        kind, transport = data.get("kind"), data.get("transport")
        if kind is not None and kind not in SOURCE_KINDS:
            self.add_error("kind", f"kind must be one of {', '.join(SOURCE_KINDS)}")
        clean_grpc(self, data, kind, transport)
        if transport == "http":
            self._clean_http(data)
        elif transport == "ssh":
            self._clean_ssh(data)
        elif transport is not None and transport not in SOURCE_TRANSPORTS:
            self.add_error("transport", f"transport must be one of {', '.join(SOURCE_TRANSPORTS)}")
        self._clean_token(data, kind)
        return data

    def _clean_http(self, data: dict[str, Any]) -> None:
        url = (data.get("url") or "").strip()
        data["url"] = url
        if not url:
            if not data.get("grpc_target"):  # a cuzk daemon may be watched through its gRPC API alone
                self.add_error("url", "an http source needs a URL such as http://10.0.0.5:9821 (or a gRPC target)")
        else:
            try:
                parts = urlsplit(url)
                port = parts.port
            except ValueError as exc:
                self.add_error("url", f"not a URL: {exc}")
                return
            if parts.scheme not in ("http", "https"):
                self.add_error("url", f"the URL must start with http:// or https://, got {url!r}")
            elif not parts.hostname:
                self.add_error("url", f"the URL has no host: {url!r}")
            elif parts.username is not None or parts.password is not None:
                self.add_error("url", "no credentials in the URL: put the token in the token field")
            elif parts.fragment:
                self.add_error("url", "the URL must not have a #fragment")
            elif port == 0:
                self.add_error("url", "the URL's port must be from 1 to 65535")
            else:
                self._refuse_blocked_host("url", parts.hostname)
        for name in ("ssh_user", "ssh_host", "ssh_key_path", "remote_port"):
            if data.get(name):
                self.add_error(name, f"{name} is for ssh sources only (this one is http)")

    def _clean_ssh(self, data: dict[str, Any]) -> None:
        if data.get("url"):
            self.add_error("url", "an ssh source has no URL: give user, host, key file and remote port")
        user, host = (data.get("ssh_user") or "").strip(), (data.get("ssh_host") or "").strip()
        if not USER_RE.match(user):
            self.add_error("ssh_user", f"ssh user must be a plain user name, got {user!r}")
        if not HOST_RE.match(host if ":" not in host else f"[{host}]"):
            self.add_error("ssh_host", f"ssh host must be a host name or an address, got {host!r}")
        else:
            self._refuse_blocked_host("ssh_host", host)
        port = data.get("ssh_port") or 22
        if not 1 <= port <= 65535:
            self.add_error("ssh_port", f"ssh port must be from 1 to 65535, got {port}")
        data["ssh_port"] = port
        remote = data.get("remote_port")
        if (remote is None and not data.get("grpc_target")) or (remote is not None and not 1 <= remote <= 65535):
            self.add_error("remote_port", "an ssh source needs the status port on the remote host (1-65535), "
                                          "or a gRPC target")
        key = (data.get("ssh_key_path") or "").strip()
        if not key:
            self.add_error("ssh_key_path", "an ssh source needs a private key file")
        elif not os.access(Path(key).expanduser(), os.R_OK) or not Path(key).expanduser().is_file():
            self.add_error("ssh_key_path", f"key file {key} is not a readable file on this host")
        policy = data.get("known_hosts_policy")
        if policy not in KNOWN_HOSTS_POLICIES:
            self.add_error("known_hosts_policy", f"known-hosts policy must be one of {', '.join(KNOWN_HOSTS_POLICIES)}")
        hosts_file = (data.get("known_hosts_path") or "").strip()
        if policy == "strict" and hosts_file and not Path(hosts_file).expanduser().is_file():
            self.add_error("known_hosts_path", f"known-hosts file {hosts_file} does not exist")
        data.update(ssh_user=user, ssh_host=host, ssh_key_path=key, known_hosts_path=hosts_file)

    def _clean_token(self, data: dict[str, Any], kind: str | None) -> None:
        token = data.get("token") or ""
        if token and (len(token) < MIN_TOKEN_CHARS or any(c.isspace() or not c.isprintable() for c in token)):
            self.add_error("token", f"a token is at least {MIN_TOKEN_CHARS} printable characters without spaces")
            return
        repointed = self.instance.pk is not None and bool(self.instance.token) and self._target_changed(data)
        if data.get("clear_token"):
            data["token"] = ""
        elif not token and self.instance.pk is not None and not repointed:
            data["token"] = self.instance.token  # write-only: an empty field keeps the stored token
        if kind == "vastmanager" and not data.get("token"):
            again = (" — the stored one was cleared because the source now points elsewhere: give it again"
                     if repointed and not data.get("clear_token") else "")
            self.add_error("token", f"a vastmanager source needs a token (its VASTMANAGER_STATUS_TOKEN){again}")

    def _target_changed(self, data: dict[str, Any]) -> bool:
        """Whether the edit points the source somewhere else than its stored row (URL, ssh host or
        port, transport): the stored token then stays behind."""
        old = self.instance
        if data.get("transport") != old.transport:
            return True
        if old.transport == "ssh":
            return (data.get("ssh_host"), data.get("ssh_port")) != (old.ssh_host, old.ssh_port)
        return (data.get("url") or "") != old.url

    def _refuse_blocked_host(self, field_name: str, host: str) -> None:
        problem = literal_problem(host)
        if problem and not getattr(settings, ALLOW_SETTING, False):
            self.add_error(field_name, refusal(host, problem))

    def save(self, commit: bool = True) -> Source:
        source: Source = super().save(commit=False)
        source.token = self.cleaned_data.get("token") or ""
        if source.pk is not None and source.transport == "ssh":
            old = Source.objects.filter(pk=source.pk).values("ssh_host", "ssh_port").first()
            if old and (old["ssh_host"], old["ssh_port"]) != (source.ssh_host, source.ssh_port):
                source.ssh_host_key = ""  # another host: the pinned key is not its key
        if commit:
            source.save()
        return source


def parse_grpc_target(value: str, *, bare_port_host: str | None = None) -> str:
    """`HOST:PORT` (IPv6 in brackets) -> the normalised target; over ssh a bare `PORT` means
    `127.0.0.1:PORT` on the remote host (`bare_port_host`)."""
    value = (value or "").strip()
    if bare_port_host is not None and value.isdigit():
        return f"{bare_port_host}:{_port(value, 'gRPC port')}"
    host, colon, raw = value.rpartition(":")
    if not colon or not host:
        raise ValidationError(f"gRPC target {value!r} must look like HOST:PORT (e.g. 10.0.0.5:9820)")
    port = _port(raw, "gRPC port")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not HOST_RE.match(bare if ":" not in bare else f"[{bare}]"):
        raise ValidationError(f"gRPC target's host must be a host name or an address, got {host!r}")
    return f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"


def clean_grpc(form: forms.BaseForm, data: dict[str, Any], kind: str | None, transport: str | None) -> None:
    """The gRPC fields: a cuzk source only; TLS only direct (the ssh channel is encrypted already)
    and its CA bundle a readable file here."""
    raw = (data.get("grpc_target") or "").strip()
    tls, ca = bool(data.get("grpc_tls")), (data.get("grpc_ca_path") or "").strip()
    data.update(grpc_target=raw, grpc_ca_path=ca)
    if not raw:
        if tls or ca:
            form.add_error("grpc_tls", "gRPC TLS and its CA file go with a gRPC target")
        return
    if kind is not None and kind != "cuzk":
        form.add_error("grpc_target", "a gRPC target is for cuzk sources (a vastmanager engine serves HTTP only)")
    try:
        data["grpc_target"] = parse_grpc_target(raw, bare_port_host="127.0.0.1" if transport == "ssh" else None)
    except ValidationError as exc:
        form.add_error("grpc_target", exc)
    if transport == "ssh" and tls:
        form.add_error("grpc_tls", "gRPC TLS is for direct connections; over ssh the channel is encrypted already")
    if ca and not tls:
        form.add_error("grpc_ca_path", "a gRPC CA file goes with TLS (--grpc-tls)")
    elif ca and (not Path(ca).expanduser().is_file() or not os.access(Path(ca).expanduser(), os.R_OK)):
        form.add_error("grpc_ca_path", f"CA file {ca} is not a readable file on this host")


def form_errors(form: forms.BaseForm) -> str:
    """All of a form's errors on one line each, for a command's message."""
    lines = []
    for field_name, errors in form.errors.items():
        for message in errors:
            lines.append(str(message) if field_name == "__all__" else f"{field_name}: {message}")
    return "\n".join(lines)
