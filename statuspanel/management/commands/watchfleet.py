"""`manage.py watchfleet [--bind HOST:PORT]`: a dashboard-only host. It serves the panel and the API
and runs the fleet collector, and proves nothing (no engine, no GPU needed). SIGINT/SIGTERM stop it."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor

from gpu_engine.console import cli
from statuspanel.models import Source


class Command(BaseCommand):
    help = "Serve the status panel for a fleet of remote engines (sources), without an engine of its own."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--bind", type=cli.bind_address, default=("127.0.0.1", 8000), metavar="HOST:PORT",
                            help="where the panel and API listen (default 127.0.0.1:8000)")

    def handle(self, *args: Any, **opts: Any) -> None:
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):
            raise CommandError("the database has unapplied migrations; run `manage.py migrate` first")
        host, port = opts["bind"]
        from gpu_engine.management.commands.runprover import Command as RunProver
        from statuspanel.auth import token_banner_lines

        RunProver._check_bind(host, port)
        shown = f"[{host}]" if ":" in host else host
        base = f"http://{shown}:{port}"
        enabled = Source.objects.filter(enabled=True).count()
        self.stdout.write("\n".join(["", "vastmanager watchfleet", f"  panel      {base}/",
                                     *token_banner_lines(base),
                                     f"  sources    {enabled} enabled (manage.py addsource / listsources)", ""]))
        self._serve(host, port)
        self.stdout.write("stopped")

    def _serve(self, host: str, port: int) -> None:
        from statuspanel.fleet.serving import start_collector, stop_collector
        from vastmanager.asgi import build_application
        from vastmanager.server import build_server

        def ready() -> None:
            import asyncio

            start_collector(asyncio.get_event_loop())

        # The guarded server of servepanel and runprover: body limits, origins, WebSocket back-pressure.
        server = build_server(build_application(), host, port, ready_callable=ready, signal_handlers=True)
        try:
            server.run()
        finally:
            stop_collector()
