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
        from statuspanel.auth import login_url

        RunProver._check_bind(host, port)
        shown = f"[{host}]" if ":" in host else host
        base = f"http://{shown}:{port}"
        enabled = Source.objects.filter(enabled=True).count()
        self.stdout.write("\n".join(["", "vastmanager watchfleet", f"  panel      {base}/",
                                     f"  login      {login_url(base)}",
                                     f"  sources    {enabled} enabled (manage.py addsource / listsources)", ""]))
        self._serve(host, port)
        self.stdout.write("stopped")

    def _serve(self, host: str, port: int) -> None:
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import Server

        from statuspanel.fleet.serving import start_collector, stop_collector
        from vastmanager.asgi import build_application

        def ready() -> None:
            import asyncio

            start_collector(asyncio.get_event_loop())

        server = Server(application=build_application(),
                        endpoints=build_endpoint_description_strings(host=host, port=port),
                        signal_handlers=True, ready_callable=ready, verbosity=0)
        try:
            server.run()
        finally:
            stop_collector()
