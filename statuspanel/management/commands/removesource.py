"""`manage.py removesource NAME [NAME ...]`: stop watching sources. Their state history is kept."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from statuspanel.models import Source


class Command(BaseCommand):
    help = "Remove fleet sources (the collector drops them within its reload interval)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="+", metavar="NAME")

    def handle(self, *args: Any, **opts: Any) -> None:
        names = list(dict.fromkeys(opts["names"]))
        found = set(Source.objects.filter(name__in=names).values_list("name", flat=True))
        missing = [n for n in names if n not in found]
        if missing:
            raise CommandError(f"no source named {', '.join(repr(n) for n in missing)}; nothing removed "
                               f"(see `manage.py listsources`)")
        Source.objects.filter(name__in=names).delete()
        self.stdout.write(f"removed {', '.join(names)}")
