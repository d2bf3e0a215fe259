"""One serving path for the commands that serve the panel: `runprover`, `servepanel`, `watchfleet`.

Each of them, before anything is printed or bound, refuses to start on a database with unapplied
migrations and on an address it cannot listen on (`check`); prints the same panel lines in its
banner (`panel_lines`: where the panel is, how to log in, where the API is); and runs the guarded
server (vastmanager.server) through `PanelServing.run`, whose ready hook runs on the server's loop
once it listens: the command's own hook first (runprover attaches its publisher there), then the
fleet collector when the command collects. However the server stops, the collector is stopped.

Several processes (`servepanel --processes N`, `Workers`): the command binds N listening sockets to
the one address with SO_REUSEPORT (the kernel spreads new connections over them) and starts N
children, each a full guarded Daphne adopting one of them; snapshots reach every child through the
Redis channel layer (REDIS_URL), which is why more than one process needs it. Only the first child
runs the fleet collector; any child ending stops the others.
"""
from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
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
                 signal_handlers: bool = False, listen_fd: int | None = None) -> None:
        self.host, self.port = host, port
        self.listen_fd = listen_fd  # a listening socket inherited from `Workers` instead of binding
        self.fleet = fleet
        self.on_ready = on_ready
        self.signal_handlers = signal_handlers
        self.base_url = base_url(host, port)

    def check(self) -> None:
        """The checks every serving command runs first."""
        check_migrations()
        if self.listen_fd is None:
            check_bind(self.host, self.port)

    def run(self) -> None:
        """Serve until the server stops (a signal, or `reactor.stop()` from the command)."""
        from vastmanager.asgi import build_application
        from vastmanager.server import build_server

        # The application serves the panel's static files itself.
        server = build_server(build_application(), self.host, self.port, ready_callable=self._ready,
                              signal_handlers=self.signal_handlers, file_descriptor=self.listen_fd)
        try:
            server.run()
        finally:
            from statuspanel.alerts.broadcast import stop_stream
            from statuspanel.alerts.serving import stop_evaluator

            stop_evaluator()
            stop_stream()
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
        # The firing alerts onto this process's WebSocket clients (whichever process evaluates).
        from statuspanel.alerts.broadcast import start_stream

        start_stream(loop)


def reuseport_sockets(host: str, port: int, count: int) -> list[socket.socket]:
    """`count` listening sockets on one address (SO_REUSEPORT), inheritable by child processes."""
    if not hasattr(socket, "SO_REUSEPORT"):
        raise CommandError("--processes needs SO_REUSEPORT (Linux, BSD, macOS)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(family, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((host, port))
            sock.listen(1024)
            sock.set_inheritable(True)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise CommandError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sockets


class Workers:
    """N child server processes sharing one port; the parent only starts, watches and stops them."""

    def __init__(self, command: str, host: str, port: int, count: int, *, extra_args: list[str] | None = None) -> None:
        self.command, self.host, self.port, self.count = command, host, port, count
        self.extra_args = extra_args or []
        self.children: list[subprocess.Popen] = []
        self._stopping = False

    def child_argv(self, fd: int, index: int) -> list[str]:
        from django.conf import settings

        bind = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        return [sys.executable, str(settings.BASE_DIR / "manage.py"), self.command, "--bind", bind,
                "--listen-fd", str(fd), "--worker-index", str(index), *self.extra_args]

    def run(self) -> int:
        """Start the children, wait until one ends (or a signal), stop the rest; the exit status."""
        sockets = reuseport_sockets(self.host, self.port, self.count)
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            for index, sock in enumerate(sockets):
                self.children.append(subprocess.Popen(self.child_argv(sock.fileno(), index),
                                                      pass_fds=(sock.fileno(),), env=os.environ.copy()))
            for sock in sockets:
                sock.close()  # the children hold them now
            status = 0
            while not self._stopping:
                ended = [child for child in self.children if child.poll() is not None]
                if ended:
                    status = next((c.returncode for c in ended if c.returncode), 0)
                    break
                time.sleep(0.2)
            self.stop()
            return status
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            for sock in sockets:
                sock.close()

    def _on_signal(self, signum: int, frame: object) -> None:
        self._stopping = True

    def stop(self, grace: float = 10.0) -> None:
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in self.children:
            try:
                child.wait(grace)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
