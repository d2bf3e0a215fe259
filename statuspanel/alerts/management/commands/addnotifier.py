"""`manage.py addnotifier NAME --kind webhook|slack|email (--url URL [--secret S] | --to ADDR ...)`:
a notifier, validated by the admin's own form; nothing saved on a bad input (every problem named)."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from statuspanel.alerts.forms import NotifierForm, form_errors
from statuspanel.alerts.models import NOTIFIER_KINDS, Notifier


class Command(BaseCommand):
    help = "Add (or with --replace, change) an alert notifier."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--kind", required=True, choices=NOTIFIER_KINDS)
        parser.add_argument("--url", default="", help="webhook / Slack: the URL to POST to")
        parser.add_argument("--secret", default="", help="webhook: the HMAC-SHA256 key")
        parser.add_argument("--secret-file", default="", help="webhook: read the HMAC key from this file")
        parser.add_argument("--to", action="append", default=[], metavar="ADDR", help="email: a recipient")
        parser.add_argument("--disabled", action="store_true")
        parser.add_argument("--replace", action="store_true", help="change the notifier of that name")

    def handle(self, *args: Any, **opts: Any) -> None:
        secret = opts["secret"]
        if opts["secret_file"]:
            try:
                with open(opts["secret_file"]) as fh:
                    secret = fh.read().strip()
            except OSError as exc:
                raise CommandError(f"cannot read the secret file: {exc.strerror}") from None
        instance = Notifier.objects.filter(name=opts["name"]).first()
        if instance is not None and not opts["replace"]:
            raise CommandError(f"a notifier named {opts['name']!r} exists (use --replace to change it)")
        form = NotifierForm(data={"name": opts["name"], "kind": opts["kind"], "url": opts["url"], "secret": secret,
                                  "recipients": "\n".join(opts["to"]), "enabled": not opts["disabled"]},
                            instance=instance)
        if not form.is_valid():
            raise CommandError("notifier not saved:\n" + form_errors(form))
        notifier = form.save()
        self.stdout.write(f"notifier {notifier.name} ({notifier.kind}) {'changed' if instance else 'added'}: "
                          f"sends to {notifier.target()}")
