"""`manage.py servepanel`: the panel and API alone (a scale-out dashboard host), in the guarded server.

The same serving path as runprover and watchfleet (vastmanager.serving): migrations and bind
checked first, the same banner lines, the guarded server (request bodies refused from
Content-Length, WebSocket back-pressure). The system checks run before it, so a weak token stops it
with the reason. `watchfleet` is this command with the fleet collector beside the server.
"""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from gpu_engine.console import cli
from vastmanager import serving


class Command(BaseCommand):
    help = "Serve the status panel and job API (no engine): the dashboard host of a scale-out deployment."
    banner_title = "vastmanager servepanel"
    collects_fleet = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bind", type=cli.bind_address, default=("127.0.0.1", 8000), metavar="HOST:PORT",
                            help="where the panel and API listen (default 127.0.0.1:8000)")

    def handle(self, *args: Any, **opts: Any) -> None:
        host, port = opts["bind"]
        panel = serving.PanelServing(host, port, fleet=self.collects_fleet, signal_handlers=True)
        panel.check()
        self.stdout.write("\n".join(["", self.banner_title, *serving.panel_lines(panel.base_url),
                                     *self.banner_lines(), ""]))
        panel.run()
        self.stdout.write("stopped")

    def banner_lines(self) -> list[str]:
        """What a command serving more than the panel adds to the banner (watchfleet)."""
        return []
