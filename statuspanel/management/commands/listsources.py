"""`manage.py listsources [--json]`: the fleet's sources, where they are polled and how they last did.
Tokens are never shown (only whether one is set)."""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from statuspanel.models import Source


class Command(BaseCommand):
    help = "List the fleet sources this dashboard watches."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="one JSON document instead of a table")

    def handle(self, *args: Any, **opts: Any) -> None:
        rows: list[dict[str, Any]] = [{"name": s.name, "kind": s.kind, "transport": s.transport, "target": s.target(),
                 "interval_secs": s.interval_secs, "enabled": s.enabled, "token": bool(s.token),
                 "state": s.state or None, "state_since": s.state_since.isoformat() if s.state_since else None,
                 "error": s.last_error or None}
                for s in Source.objects.order_by("name")]
        if opts["json"]:
            self.stdout.write(json.dumps({"sources": rows}, indent=1))
            return
        if not rows:
            self.stdout.write("no sources; add one with `manage.py addsource NAME --kind cuzk --url URL`")
            return
        header = ("NAME", "KIND", "TARGET", "EVERY", "ON", "TOKEN", "STATE", "SINCE", "ERROR")
        table = [header] + [(r["name"], r["kind"], r["target"], f"{r['interval_secs']:g}s",
                             "yes" if r["enabled"] else "no", "set" if r["token"] else "-", r["state"] or "-",
                             (r["state_since"] or "-")[:19], r["error"] or "") for r in rows]
        widths = [max(len(str(row[i])) for row in table) for i in range(len(header) - 1)]
        for row in table:
            self.stdout.write("  ".join(str(v).ljust(w) for v, w in zip(row, widths)) + "  " + str(row[-1]))
