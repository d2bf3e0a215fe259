"""`manage.py servepanel`: the panel and API alone (a scale-out dashboard host), in the guarded server.

The same serving path as runprover and watchfleet (vastmanager.serving): migrations and bind
checked first, the same banner lines, the guarded server (request bodies refused from
Content-Length, WebSocket back-pressure). The system checks run before it, so a weak token stops it
with the reason. `watchfleet` is this command with the fleet collector beside the server.

`--processes N` serves from N processes sharing the port (SO_REUSEPORT; vastmanager.serving.Workers),
each a full Daphne: more viewers than one process's event loop can write to. Snapshots reach every
process through the Redis channel layer, so N > 1 needs REDIS_URL.
"""
from __future__ import annotations

import argparse
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from gpu_engine.console import cli
from vastmanager import serving


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"must be between 1 and 64, got {value}")
    return value


class Command(BaseCommand):
    help = "Serve the status panel and job API (no engine): the dashboard host of a scale-out deployment."
    banner_title = "vastmanager servepanel"
    collects_fleet = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bind", type=cli.bind_address, default=("127.0.0.1", 8000), metavar="HOST:PORT",
                            help="where the panel and API listen (default 127.0.0.1:8000)")
        parser.add_argument("--processes", type=positive_int, default=1, metavar="N",
                            help="server processes sharing the port (default 1; more than 1 needs REDIS_URL)")
        # Set by --processes for its children: the listening socket they adopt, and which child they are.
        parser.add_argument("--listen-fd", type=int, default=None, help=argparse.SUPPRESS)
        parser.add_argument("--worker-index", type=int, default=0, help=argparse.SUPPRESS)

    def handle(self, *args: Any, **opts: Any) -> None:
        host, port = opts["bind"]
        processes, listen_fd = opts["processes"], opts["listen_fd"]
        if processes > 1 and not settings.REDIS_URL:
            raise CommandError("--processes above 1 needs REDIS_URL: the in-memory channel layer reaches one "
                               "process only, so the other processes' viewers would get no snapshots")
        if processes > 1 and ":" in host:
            raise CommandError("--processes above 1 listens on IPv4 addresses only (the adopted-socket endpoint's "
                               "one family); bind 0.0.0.0 or an IPv4 address")
        collects = self.collects_fleet and opts["worker_index"] == 0  # one collector per deployment
        panel = serving.PanelServing(host, port, fleet=collects, signal_handlers=True, listen_fd=listen_fd)
        panel.check()
        if listen_fd is not None:  # a child of --processes: the parent printed the banner
            panel.run()
            return
        self.stdout.write("\n".join(["", self.banner_title, *serving.panel_lines(panel.base_url),
                                     *self.banner_lines(), *self.process_lines(processes), ""]))
        if processes == 1:
            panel.run()
        else:
            status = serving.Workers(self.command_name(), host, port, processes).run()
            if status:
                raise CommandError(f"a server process exited with status {status}")
        self.stdout.write("stopped")

    def command_name(self) -> str:
        return self.__module__.rsplit(".", 1)[-1]

    def process_lines(self, processes: int) -> list[str]:
        return [f"  processes  {processes} sharing the port (Redis channel layer)"] if processes > 1 else []

    def banner_lines(self) -> list[str]:
        """What a command serving more than the panel adds to the banner (watchfleet)."""
        return []
