"""`manage.py runprover`: the engine, and by default the panel and API served from the same process.

Embedded mode runs Daphne in the main thread (it owns the reactor) and the engine in background
threads; the publisher sends onto Daphne's event loop, captured when the server is ready. The
first SIGINT/SIGTERM stops claiming and drains (held jobs finish or go back to the queue), then
exits 0; a second one exits at once (leases make that safe).
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from argparse import ArgumentTypeError
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor

from gpu_engine import runtime
from gpu_engine.console import cli
from gpu_engine.formatting import human_bytes
from gpu_engine.engine import Engine, EngineConfig


def _release_ipc_now(timeout: float = 1.0) -> None:
    """Before an immediate exit: run multiprocessing's own exit-time cleanups that do not wait (its
    queues' close and its named semaphores' unlink), so the resource tracker finds nothing left to
    clean and warns of no leak. Bounded: an exit on request never waits on them for long."""
    import multiprocessing.util

    worker = threading.Thread(target=multiprocessing.util._run_finalizers, args=(0,), daemon=True)
    worker.start()
    worker.join(timeout)


class Command(BaseCommand):
    help = "Prove queued jobs (and serve the status panel and job API unless --no-serve)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--bind", type=cli.bind_address, default=("127.0.0.1", 8000), metavar="HOST:PORT",
                            help="where the panel and API listen (default 127.0.0.1:8000)")
        parser.add_argument("--no-serve", action="store_true", help="run the engine only (scale-out GPU host)")
        parser.add_argument("--workers", type=cli.positive_int, default=1, metavar="N",
                            help="GPU workers per device (default 1)")
        parser.add_argument("--gpus", type=cli.gpu_list, default="auto", metavar="LIST|auto|none",
                            help="device ordinals such as 0,1; auto = all; none = CPU backend")
        parser.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto")
        parser.add_argument("--synth-workers", type=cli.positive_int, default=max(1, (os.cpu_count() or 2) // 2),
                            metavar="N", help="synthesis processes (default: half the cores)")
        parser.add_argument("--finalizers", type=cli.positive_int, default=1, metavar="N",
                            help="threads finishing partitions on the CPU (default 1)")
        parser.add_argument("--proving-processes", type=_non_negative_int, default=None, metavar="N",
                            help="processes for the CPU-heavy proving work, off the web server's GIL "
                                 "(default: CPU workers + finalizers, at most the cores; 0 = in the engine's threads)")
        parser.add_argument("--memory-budget", type=cli.memory_size, default=cli.memory_size("4GiB"), metavar="SIZE",
                            help="bytes partitions in flight may hold, e.g. 8GiB (default 4GiB)")
        parser.add_argument("--engine-id", default=socket.gethostname(), metavar="ID",
                            help="name of this engine in the panel and the job history (default: host name)")
        parser.add_argument("--drain-secs", type=float, default=30.0, metavar="S",
                            help="on SIGINT/SIGTERM, how long held jobs may finish before they are returned")
        parser.add_argument("--demo", action="store_true", help="keep a mixed stream of demo jobs queued")
        parser.add_argument("--no-fleet", action="store_true",
                            help="do not poll the fleet's sources (manage.py addsource) while serving")

    def handle(self, *args: Any, **opts: Any) -> None:
        self._check_migrations()
        try:
            backend, gpus = cli.resolve_devices(opts["backend"], opts["gpus"])
            from gpu_engine.wire import validate_engine_id

            engine_id = validate_engine_id(opts["engine_id"])
            if not 0 <= opts["drain_secs"] <= threading.TIMEOUT_MAX:  # also refuses nan
                raise ValueError(f"--drain-secs must be between 0 and {threading.TIMEOUT_MAX:.0f}, "
                                 f"got {opts['drain_secs']}")
            config = EngineConfig(
                engine_id=engine_id, backend=backend, gpus=gpus, workers_per_device=opts["workers"],
                synth_workers=opts["synth_workers"], finalizers=opts["finalizers"],
                memory_budget=opts["memory_budget"], drain_secs=opts["drain_secs"],
                proving_processes=opts["proving_processes"],
            )
            engine = Engine(config)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        serve = not opts["no_serve"]
        self._no_fleet = opts["no_fleet"]
        host, port = opts["bind"]
        if serve:
            self._check_bind(host, port)
        self._banner(engine, serve, host, port)
        try:
            engine.prepare(progress=cli.ParamsProgress(self.stdout._out))
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write("  ready: waiting for jobs" + (" (demo stream on)" if opts["demo"] else ""))
        self._run(engine, serve, host, port, opts["demo"])

    # ---- pieces ------------------------------------------------------------------------

    def _check_migrations(self) -> None:
        connection = connections[DEFAULT_DB_ALIAS]
        executor = MigrationExecutor(connection)
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):
            raise CommandError("the database has unapplied migrations; run `manage.py migrate` first")

    def _banner(self, engine: Engine, serve: bool, host: str, port: int) -> None:
        from statuspanel.auth import token_banner_lines

        cfg = engine.config
        shown = f"[{host}]" if ":" in host else host
        base = f"http://{shown}:{port}"
        db = settings.DATABASES["default"]
        lines = ["", "vastmanager runprover", f"  engine     {cfg.engine_id}"]
        if serve:
            lines += [f"  panel      {base}/", *token_banner_lines(base),
                      f"  API        {base}/api/jobs   (Authorization: Bearer <token>)"]
        else:
            lines += ["  panel      not served here (--no-serve)"]
        lines += [
            f"  backend    {cfg.backend}: {len(engine.workers)} worker(s) "
            f"({', '.join(f'W{w}' for w, _ in engine.workers)}) on device(s) {','.join(map(str, cfg.gpus))}",
            f"  synthesis  {cfg.synth_workers} process(es), {cfg.finalizers} finalizer thread(s)",
            "  proving    " + (f"{engine.proving_processes} process(es)" if engine.proving_processes
                                else "in the engine's threads (--proving-processes 0)"),
            f"  budget     {human_bytes(cfg.memory_budget)}",
            f"  params     {cfg.params_dir} (circuit scale {cfg.scale})",
            f"  database   {db['ENGINE'].rsplit('.', 1)[-1]} {db.get('NAME')}",
            "",
        ]
        self.stdout.write("\n".join(lines))

    def _run(self, engine: Engine, serve: bool, host: str, port: int, demo: bool) -> None:
        from gpu_engine.console.demo import DemoFeeder
        from gpu_engine.publisher import SnapshotPublisher

        cfg = engine.config
        publisher = SnapshotPublisher(engine.tracker, cfg.engine_id)
        engine.add_listener(cli.ProgressPrinter(engine.stats, self.stdout._out))
        feeder = DemoFeeder() if demo else None
        server = self._server(host, port, publisher, fleet=not self._no_fleet) if serve else None
        signals = {"count": 0}
        server_failed = False

        def on_signal(signum: int, frame: Any) -> None:
            signals["count"] += 1
            if signals["count"] > 1:
                sys.stderr.write("second signal: exiting now (held leases will expire)\n")
                sys.stderr.flush()
                _release_ipc_now()
                os._exit(128 + signum)
            sys.stderr.write(f"{signal.Signals(signum).name}: no new claims; finishing held jobs "
                             f"(up to {cfg.drain_secs:.0f}s, then returning them). Signal again to exit now.\n")
            sys.stderr.flush()
            if feeder:
                threading.Thread(target=feeder.stop, daemon=True).start()
            engine.request_stop()

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        runtime.set_local_tracker(engine.tracker, cfg.engine_id)
        try:
            engine.start()
            if not serve:
                publisher.start()
            if feeder:
                feeder.start()
            if server is not None:
                threading.Thread(target=self._stop_server_after, args=(engine,), daemon=True).start()
                server.run()  # returns when the engine has stopped and the reactor is stopped
                if not signals["count"] and not engine.wait(0):
                    # The server gave up on its own (e.g. lost the port): do not prove unseen.
                    server_failed = True
                    engine.request_stop(drain_secs=0)
            while not engine.wait(0.5):
                pass
        finally:
            if feeder:
                feeder.stop()
            publisher.stop()
            if serve:
                from statuspanel.fleet.serving import stop_collector

                stop_collector()
            runtime.set_local_tracker(None)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        with engine.stats.lock:
            done = sum(engine.stats.done_by_kind.values())
            failed = sum(engine.stats.failed_by_kind.values())
            cancelled = sum(engine.stats.cancelled_by_kind.values())
        stopped = f"stopped: {done} proved, {failed} failed" + (f", {cancelled} cancelled" if cancelled else "")
        self.stdout.write(stopped)
        if engine.fatal_error is not None:
            raise CommandError(f"{engine.fatal_error}; held jobs were returned to the queue (see the log above)")
        if server_failed:
            raise CommandError(f"the web server on {host}:{port} stopped unexpectedly; held jobs were returned")

    @staticmethod
    def _check_bind(host: str, port: int) -> None:
        """Fail before proving anything when the panel's address cannot be bound."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind((host, port))
        except OSError as exc:
            raise CommandError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None

    def _server(self, host: str, port: int, publisher, *, fleet: bool = True):
        """Daphne for the panel and API (with body limits and WebSocket back-pressure: vastmanager.server),
        publishing onto its loop once it is listening (and the fleet collector's snapshots too, unless
        --no-fleet)."""
        from vastmanager.asgi import build_application
        from vastmanager.server import build_server

        def ready() -> None:
            import asyncio

            loop = asyncio.get_event_loop()
            publisher.attach_loop(loop)
            publisher.start()
            if fleet:
                from statuspanel.fleet.serving import start_collector

                start_collector(loop)

        # The application serves the panel's static files itself.
        return build_server(build_application(), host, port, ready_callable=ready)

    @staticmethod
    def _stop_server_after(engine: Engine) -> None:
        from twisted.internet import reactor

        engine.wait()
        reactor.callFromThread(reactor.stop)


def _non_negative_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ArgumentTypeError(f"expected a non-negative integer, got {value!r}") from None
    if number < 0:
        raise ArgumentTypeError(f"expected a non-negative integer, got {number}")
    return number
