"""`manage.py watchfleet [--bind HOST:PORT]`: a dashboard-only host. It serves the panel and the API
(servepanel's guarded server) and runs the fleet collector, and proves nothing (no engine, no GPU
needed). SIGINT/SIGTERM stop it."""
from __future__ import annotations

from django.core.management.base import CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor

from statuspanel.management.commands.servepanel import Command as ServePanel
from statuspanel.models import Source


class Command(ServePanel):
    help = "Serve the status panel for a fleet of remote engines (sources), without an engine of its own."
    banner_title = "vastmanager watchfleet"

    def before_serving(self, host: str, port: int) -> None:
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):
            raise CommandError("the database has unapplied migrations; run `manage.py migrate` first")
        from gpu_engine.management.commands.runprover import Command as RunProver

        RunProver._check_bind(host, port)

    def banner_lines(self) -> list[str]:
        enabled = Source.objects.filter(enabled=True).count()
        return [f"  sources    {enabled} enabled (manage.py addsource / listsources)"]

    def server_ready(self) -> None:
        import asyncio

        from statuspanel.fleet.serving import start_collector

        start_collector(asyncio.get_event_loop())
        super().server_ready()

    def after_serving(self) -> None:
        from statuspanel.fleet.serving import stop_collector

        stop_collector()
        super().after_serving()
        self.stdout.write("stopped")
