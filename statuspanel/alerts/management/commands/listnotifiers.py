"""`manage.py listnotifiers [--json]`: the notifiers, without their secrets."""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from statuspanel.alerts.models import Notifier


class Command(BaseCommand):
    help = "List the alert notifiers (URLs with tokens and secrets are never shown)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        rows = [{"name": n.name, "kind": n.kind, "target": n.target(), "secret": "set" if n.secret else "none",
                 "enabled": n.enabled, "last_delivery": _last(n)} for n in Notifier.objects.all()]
        if opts["json"]:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        if not rows:
            self.stdout.write("no notifiers (manage.py addnotifier NAME --kind webhook|slack|email ...)")
        for r in rows:
            self.stdout.write(f"{r['name']:<20} {r['kind']:<8} {'enabled' if r['enabled'] else 'disabled':<9} "
                              f"secret {r['secret']:<5} {r['target']}  last: {r['last_delivery'] or '-'}")


def _last(notifier: Notifier) -> str | None:
    d = notifier.deliveries.order_by("-created_at").first()
    return f"{d.state} at {d.created_at:%Y-%m-%d %H:%M:%S}" if d else None
