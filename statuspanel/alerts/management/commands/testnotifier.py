"""`manage.py testnotifier NAME`: send one test notification now and say what the receiver answered."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from statuspanel.alerts.delivery import send_test
from statuspanel.alerts.models import Notifier


class Command(BaseCommand):
    help = "Send a test notification through a notifier (exit status 1 when it is not accepted)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")

    def handle(self, *args: Any, **opts: Any) -> None:
        notifier = Notifier.objects.filter(name=opts["name"]).first()
        if notifier is None:
            raise CommandError(f"no notifier named {opts['name']!r}")
        outcome = send_test(notifier)
        if not outcome.ok:
            raise CommandError(f"notifier {notifier.name}: not delivered ({outcome.error}) "
                               f"after {outcome.duration_ms:.0f} ms")
        self.stdout.write(f"notifier {notifier.name}: delivered to {notifier.target()} "
                          f"(status {outcome.status}, {outcome.duration_ms:.0f} ms)")
