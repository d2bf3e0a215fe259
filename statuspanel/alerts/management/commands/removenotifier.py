"""`manage.py removenotifier NAME...`: remove notifiers (their past deliveries stay, by name)."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from statuspanel.alerts.models import Notifier


class Command(BaseCommand):
    help = "Remove alert notifiers by name."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="+")

    def handle(self, *args: Any, **opts: Any) -> None:
        missing = [n for n in opts["names"] if not Notifier.objects.filter(name=n).exists()]
        if missing:
            raise CommandError(f"no notifier named {', '.join(repr(m) for m in missing)}; nothing removed")
        for name in opts["names"]:
            Notifier.objects.filter(name=name).delete()
            self.stdout.write(f"notifier {name} removed")
