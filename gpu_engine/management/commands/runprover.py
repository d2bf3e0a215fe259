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
from functools import partial
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from gpu_engine import runtime
from gpu_engine.console import cli
from gpu_engine.engine import Engine, EngineConfig
from gpu_engine.engine.proving import default_finalizers
from gpu_engine.formatting import human_bytes
from vastmanager import serving


def _release_ipc_now(timeout: float = 1.0) -> None:
    """Before an immediate exit: run multiprocessing's own exit-time cleanups that do not wait (its
    queues' close and its named semaphores' unlink), so the resource tracker finds nothing left to
    clean and warns of no leak. Bounded: an exit on request never waits on them for long."""
    import multiprocessing.util

    # multiprocessing runs these at exit; an exit that skips the interpreter's teardown must call them itself
    # typeshed does not list this private helper
    worker = threading.Thread(target=multiprocessing.util._run_finalizers,  # type: ignore[attr-defined]  # noqa: SLF001
                              args=(0,), daemon=True)
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
        parser.add_argument("--finalizers", type=cli.positive_int, default=None, metavar="N",
                            help="threads finishing partitions on the CPU (default: a quarter of the cores "
                                 "with the CUDA backend, 1 with the CPU backend)")
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
        serving.check_migrations()
        try:
            backend, gpus = cli.resolve_devices(opts["backend"], opts["gpus"])
            from gpu_engine.wire import validate_engine_id

            engine_id = validate_engine_id(opts["engine_id"])
            if not 0 <= opts["drain_secs"] <= threading.TIMEOUT_MAX:  # also refuses nan
                raise ValueError(f"--drain-secs must be between 0 and {threading.TIMEOUT_MAX:.0f}, "
                                 f"got {opts['drain_secs']}")
            config = EngineConfig(
                engine_id=engine_id, backend=backend, gpus=gpus, workers_per_device=opts["workers"],
                synth_workers=opts["synth_workers"], finalizers=opts["finalizers"] or default_finalizers(backend),
                memory_budget=opts["memory_budget"], drain_secs=opts["drain_secs"],
                proving_processes=opts["proving_processes"],
            )
            engine = Engine(config)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        host, port = opts["bind"]
        panel = None
        if not opts["no_serve"]:
            panel = serving.PanelServing(host, port, fleet=not opts["no_fleet"])
            serving.check_bind(host, port)
        out = serving.command_stream(opts)
        self._banner(engine, panel)
        try:
            engine.prepare(progress=cli.ParamsProgress(out))
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write("  ready: waiting for jobs" + (" (demo stream on)" if opts["demo"] else ""))
        self._run(engine, panel, out, opts["demo"])

    # ---- pieces ------------------------------------------------------------------------

    def _banner(self, engine: Engine, panel: serving.PanelServing | None) -> None:
        cfg = engine.config
        db = settings.DATABASES["default"]
        lines = ["", "vastmanager runprover", f"  engine     {cfg.engine_id}"]
        if panel is not None:
            lines += serving.panel_lines(panel.base_url)
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

    def _run(self, engine: Engine, panel: serving.PanelServing | None, out: Any, demo: bool) -> None:
        from gpu_engine.console.demo import DemoFeeder
        from gpu_engine.publisher import SnapshotPublisher

        cfg = engine.config
        publisher = SnapshotPublisher(engine.tracker, cfg.engine_id)
        engine.add_listener(cli.ProgressPrinter(engine.stats, out))
        feeder = DemoFeeder() if demo else None
        if panel is not None:
            panel.on_ready = partial(_publish_through, publisher)  # once the server's loop runs
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
            if panel is None:
                publisher.start()
            if feeder:
                feeder.start()
            if panel is not None:
                threading.Thread(target=_stop_server_after, args=(engine,), daemon=True).start()
                panel.run()  # returns when the engine has stopped and the reactor is stopped
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
        if server_failed and panel is not None:  # only a served panel's server fails
            raise CommandError(f"the web server on {panel.host}:{panel.port} stopped unexpectedly; "
                               "held jobs were returned")


def _publish_through(publisher: Any, loop: Any) -> None:
    """The serving ready hook: the publisher sends onto the server's loop (the in-memory layer needs it)."""
    publisher.attach_loop(loop)
    publisher.start()


def _stop_server_after(engine: Engine) -> None:
    from twisted.internet import reactor

    engine.wait()
    # zope interface methods are declared without self: without a zope plugin mypy reads stop as unbound
    reactor.callFromThread(reactor.stop)  # type: ignore[misc]


def _non_negative_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ArgumentTypeError(f"expected a non-negative integer, got {value!r}") from None
    if number < 0:
        raise ArgumentTypeError(f"expected a non-negative integer, got {number}")
    return number
