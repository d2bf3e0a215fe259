"""`manage.py servepanel`: the panel and API alone (a scale-out dashboard host), in the guarded server.

The same server runprover embeds (vastmanager.server): request bodies refused from Content-Length,
WebSocket back-pressure. Runs the system checks first, so a weak token stops it with the reason.
`watchfleet` is this command with the fleet collector beside the server.
"""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from gpu_engine.console import cli


class Command(BaseCommand):
    help = "Serve the status panel and job API (no engine): the dashboard host of a scale-out deployment."
    banner_title = "vastmanager servepanel"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bind", type=cli.bind_address, default=("127.0.0.1", 8000), metavar="HOST:PORT",
                            help="where the panel and API listen (default 127.0.0.1:8000)")

    def handle(self, *args: Any, **opts: Any) -> None:
        from statuspanel.auth import token_banner_lines
        from vastmanager.asgi import build_application
        from vastmanager.server import build_server

        host, port = opts["bind"]
        self.before_serving(host, port)
        shown = f"[{host}]" if ":" in host else host
        base = f"http://{shown}:{port}"
        self.stdout.write("\n".join(["", self.banner_title, f"  panel      {base}/",
                                     *token_banner_lines(base), *self.banner_lines(), ""]))
        server = build_server(build_application(), host, port, ready_callable=self.server_ready, signal_handlers=True)
        try:
            server.run()
        finally:
            self.after_serving()

    # What a command serving more than the panel adds (watchfleet).
    def before_serving(self, host: str, port: int) -> None:
        """Refuse to start (CommandError) before anything is printed or bound."""

    def banner_lines(self) -> list[str]:
        return []

    def server_ready(self) -> None:
        """Called on the server's loop once it listens."""

    def after_serving(self) -> None:
        """Called when the server has stopped, however it stopped."""
