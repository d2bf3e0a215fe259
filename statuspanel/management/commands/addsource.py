"""`manage.py addsource NAME --kind cuzk|vastmanager (--url URL | --ssh USER@HOST[:PORT] --key FILE
[--remote-port N]) [--grpc HOST:PORT [--grpc-tls [--grpc-ca FILE]]] [--token T | --token-file F]
[--interval SECS]`: add (or with --replace, edit) a fleet source. A cuzk source may be watched
through its gRPC API (`--grpc`) alone or beside its HTTP status. Validated by the same form as the
admin (statuspanel/fleet/forms.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from statuspanel.fleet.forms import SourceForm, form_errors, parse_ssh_target
from statuspanel.fleet.vocabulary import SOURCE_KINDS
from statuspanel.models import DEFAULT_INTERVAL_SECS, KNOWN_HOSTS_POLICIES, Source


class Command(BaseCommand):
    help = "Add a fleet source (a cuzk daemon or another vastmanager engine) to the dashboard."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the engine id it is shown under")
        parser.add_argument("--kind", required=True, choices=SOURCE_KINDS)
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--url", help="http(s) URL of the engine (its status path is added when absent)")
        where.add_argument("--ssh", metavar="USER@HOST[:PORT]", help="reach the status port through ssh")
        parser.add_argument("--grpc", metavar="HOST:PORT", default="",
                            help="cuzk: its gRPC API (alone, or beside --url; with --ssh as the remote host "
                                 "reaches it, e.g. 127.0.0.1:9820, or just the port)")
        parser.add_argument("--grpc-tls", action="store_true", help="cuzk gRPC over TLS (not with --ssh)")
        parser.add_argument("--grpc-ca", metavar="FILE", default="", help="gRPC TLS: CA bundle (default: system roots)")
        parser.add_argument("--key", metavar="FILE", default="", help="ssh: private key file")
        parser.add_argument("--remote-port", type=int, default=None, metavar="N",
                            help="ssh: the status port on the remote host's loopback")
        parser.add_argument("--known-hosts", choices=KNOWN_HOSTS_POLICIES, default="pin",
                            help="ssh host key check: strict (known-hosts file), pin (first key seen, default), off")
        parser.add_argument("--known-hosts-file", default="", metavar="FILE", help="ssh strict policy: the file")
        secret = parser.add_mutually_exclusive_group()
        secret.add_argument("--token", default="", help="bearer token (visible in the process list: "
                                                        "prefer --token-file)")
        secret.add_argument("--token-file", type=Path, default=None, metavar="FILE",
                            help="read the bearer token from this file")
        parser.add_argument("--interval", type=float, default=DEFAULT_INTERVAL_SECS, metavar="SECS",
                            help=f"poll interval (default {DEFAULT_INTERVAL_SECS})")
        parser.add_argument("--price-per-hour", default=None, metavar="PRICE",
                            help="what the box costs per hour, in PRICE_CURRENCY ('' clears it; "
                                 "with --replace and no value, the current price is kept)")
        parser.add_argument("--disabled", action="store_true", help="add it without polling it yet")
        parser.add_argument("--replace", action="store_true", help="edit the source of that name if it exists")

    def handle(self, *args: Any, **opts: Any) -> None:
        token = opts["token"]
        if opts["token_file"] is not None:
            try:
                token = opts["token_file"].read_text().strip()
            except OSError as exc:
                raise CommandError(f"cannot read --token-file: {exc.strerror or exc}") from None
        data: dict[str, Any] = {"name": opts["name"], "kind": opts["kind"], "token": token,
                                "interval_secs": opts["interval"], "enabled": not opts["disabled"],
                                "known_hosts_policy": opts["known_hosts"],
                                "known_hosts_path": opts["known_hosts_file"], "grpc_target": opts["grpc"],
                                "grpc_tls": opts["grpc_tls"], "grpc_ca_path": opts["grpc_ca"]}
        if opts["url"] is None and opts["ssh"] is None and not opts["grpc"]:
            raise CommandError("say where the source is: --url URL, --ssh USER@HOST[:PORT] or --grpc HOST:PORT")
        if opts["ssh"] is not None:
            try:
                user, host, port = parse_ssh_target(opts["ssh"])
            except ValidationError as exc:
                raise CommandError(f"--ssh: {' '.join(exc.messages)}") from None
            data.update(transport="ssh", ssh_user=user, ssh_host=host, ssh_port=port, ssh_key_path=opts["key"],
                        remote_port=opts["remote_port"])
        else:
            if opts["key"] or opts["remote_port"] is not None:
                raise CommandError("--key and --remote-port go with --ssh, not --url")
            data.update(transport="http", url=opts["url"] or "")
        existing = Source.objects.filter(name=opts["name"]).first()
        if existing is not None and not opts["replace"]:
            raise CommandError(f"a source named {opts['name']!r} exists; use --replace to edit it")
        price = opts["price_per_hour"]
        if price is None and existing is not None:
            price = existing.price_per_hour
        data["price_per_hour"] = "" if price is None else str(price).strip()
        form = SourceForm(data, instance=existing)
        if not form.is_valid():
            raise CommandError(f"source {opts['name']!r} not saved:\n{form_errors(form)}")
        source = form.save()
        verb = "updated" if existing is not None else "added"
        self.stdout.write(f"{verb} source {source.name} ({source.kind}, {source.transport} {source.target()}, "
                          f"every {source.interval_secs:g} s{', disabled' if not source.enabled else ''}"
                          f"{', token set' if source.token else ''}"
                          f"{f', {source.price_per_hour:g} per hour' if source.price_per_hour is not None else ''})")
