"""One serving path for the commands that serve the panel: `runprover`, `servepanel`, `watchfleet`.

Each of them, before anything is printed or bound, refuses to start on a database with unapplied
migrations and on an address it cannot listen on (`check`); prints the same panel lines in its
banner (`panel_lines`: where the panel is, how to log in, where the API is); and runs the guarded
server (vastmanager.server) through `PanelServing.run`, whose ready hook runs on the server's loop
once it listens: the command's own hook first (runprover attaches its publisher there), then the
fleet collector when the command collects. However the server stops, the collector is stopped.
"""
from __future__ import annotations

import asyncio
import socket
import sys
from typing import Any, Callable, TextIO

from django.core.management.base import CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor


def check_migrations() -> None:
    """CommandError when the database lacks a migration (the server would answer 500s)."""
    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        raise CommandError("the database has unapplied migrations; run `manage.py migrate` first")


def check_bind(host: str, port: int) -> None:
    """CommandError when `host:port` cannot be bound: fail before proving or printing anything."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise CommandError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def base_url(host: str, port: int) -> str:
    """The URL the panel is reached at (an IPv6 literal in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def panel_lines(base: str) -> list[str]:
    """The banner's lines about the panel: its URL, the login (never the token itself), the API."""
    from statuspanel.auth import token_banner_lines

    return [f"  panel      {base}/", *token_banner_lines(base),
            f"  API        {base}/api/jobs   (Authorization: Bearer <token>)"]


def command_stream(options: dict[str, Any]) -> TextIO:
    """The raw stream a command writes to (the `stdout` given to call_command, else sys.stdout), for
    progress output that draws its own line endings (Django's OutputWrapper appends a newline)."""
    return options.get("stdout") or sys.stdout


class PanelServing:
    """The panel and API on `host:port`, with the alert evaluator and an optional fleet collector beside them."""

    def __init__(self, host: str, port: int, *, fleet: bool,
                 on_ready: Callable[[asyncio.AbstractEventLoop], None] | None = None,
                 signal_handlers: bool = False) -> None:
        self.host, self.port = host, port
        self.fleet = fleet
        self.on_ready = on_ready
        self.signal_handlers = signal_handlers
        self.base_url = base_url(host, port)

    def check(self) -> None:
        """The checks every serving command runs first."""
        check_migrations()
        check_bind(self.host, self.port)

    def run(self) -> None:
        """Serve until the server stops (a signal, or `reactor.stop()` from the command)."""
        from vastmanager.asgi import build_application
        from vastmanager.server import build_server

        # The application serves the panel's static files itself.
        server = build_server(build_application(), self.host, self.port, ready_callable=self._ready,
                              signal_handlers=self.signal_handlers)
        try:
            server.run()
        finally:
            from statuspanel.alerts.serving import stop_evaluator

            stop_evaluator()
            if self.fleet:
                from statuspanel.fleet.serving import stop_collector

                stop_collector()

    def _ready(self) -> None:
        loop = asyncio.get_event_loop()  # Daphne calls this on its running loop
        if self.on_ready is not None:
            self.on_ready(loop)
        if self.fleet:
            from statuspanel.fleet.serving import start_collector

            start_collector(loop)
        # One evaluator per deployment (a database lease): every process that serves the panel offers one.
        from statuspanel.alerts.serving import start_evaluator

        start_evaluator()
