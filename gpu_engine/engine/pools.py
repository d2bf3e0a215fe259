"""One process pool for the engine's CPU-heavy work (synthesis, proving) that rebuilds itself.

A child that dies breaks a whole `ProcessPoolExecutor`: every pending future fails with
`BrokenProcessPool` and the executor accepts nothing more. Both of the engine's pools want the
same answer: start a fresh executor once (however many callers saw the breakage), let the caller
treat its partition as a failed attempt, and carry on. That policy lives here, once.

Children are started by a forkserver (never fork: the parent holds Django, threads and locks a
forked child would inherit mid-use) and initialised by `child_init`. Neither the forkserver nor a
child dies of a signal sent to the whole process group (a systemd stop, Ctrl-C): the engine alone
decides when they go, and they go with it.
"""
from __future__ import annotations

import functools
import logging
import multiprocessing
import os
import select
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterable, TypeVar

T = TypeVar("T")

log = logging.getLogger(__name__)

__all__ = ["BrokenProcessPool", "CHILD_NICENESS", "GROUP_SIGNALS", "ProcessPool", "child_init", "start_forkserver"]

# Pool children run at a lower CPU priority than the engine process, which serves the web: when
# the cores are all busy, a request or a frame to send wins over a few more ms of an MSM.
CHILD_NICENESS = 10

# Modules every child imports once in the forkserver, before any task: pure code, no Django.
FORKSERVER_PRELOAD = ["gpu_engine.groth16.api", "gpu_engine.backends.cpu", "gpu_engine.engine.proving"]


# A stop or a Ctrl-C signals the whole process group (systemd's KillMode=control-group, a terminal):
# the children must not die of it, since the engine drains its held jobs through them.
GROUP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})


# Imported first by the forkserver: makes it ignore SIGTERM (see forkserver_signals.py).
FORKSERVER_SIGNALS = "gpu_engine.engine.forkserver_signals"


def start_forkserver(preload: Iterable[str]) -> None:
    """Start this process's forkserver (again, if it died) with our preload list, led by the module
    that makes it deaf to a group SIGTERM; SIGINT it ignores on its own."""
    from multiprocessing import forkserver

    modules = [FORKSERVER_SIGNALS, *(m for m in preload if m != FORKSERVER_SIGNALS)]
    multiprocessing.get_context("forkserver").set_forkserver_preload(modules)
    forkserver.ensure_running()


def child_init(engine_pid: int, preload: Callable[[], None] | None = None) -> None:
    """Initializer of every pool child.

    * SIGINT and SIGTERM sent to the group are ignored: the engine drains its held jobs through
      these children, then shuts them down itself (the executor's sentinel, or its `terminate()`
      of a broken pool: a SIGTERM from the engine's own pid, which the child obeys).
    * The child exits when the engine process does: an engine killed outright leaves no
      orphans holding memory (the stdlib's children would wait on their queue forever).
    * It runs at CHILD_NICENESS.
    * `preload`: work done before the first task (a failure is only logged; the task that needs
      it does it again and reports the real error)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # SIGTERM arrives ignored (inherited from the forkserver). Blocked before any thread starts, so
    # every thread inherits the mask, it can get its default back: blocked signals wait, for the
    # one thread that takes them (and only obeys the engine's).
    signal.pthread_sigmask(signal.SIG_BLOCK, GROUP_SIGNALS)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        os.nice(CHILD_NICENESS)
    except OSError:
        pass
    threading.Thread(target=_exit_with, args=(engine_pid,), name="engine-watch", daemon=True).start()
    threading.Thread(target=_obey_engine_sigterm, args=(engine_pid,), name="engine-signals", daemon=True).start()
    if preload is not None:
        try:
            preload()
        except Exception:  # preloading is an optimisation; the task reports the error
            log.exception("pool process %d: preload failed", os.getpid())


def _obey_engine_sigterm(engine_pid: int) -> None:
    """Take the blocked SIGTERMs one by one: exit on one sent by the engine, drop any other."""
    while True:
        info = signal.sigwaitinfo({signal.SIGTERM})
        if info.si_pid == engine_pid:
            os._exit(128 + signal.SIGTERM)


def _exit_with(engine_pid: int) -> None:
    try:
        fd = os.pidfd_open(engine_pid)
    except (AttributeError, OSError):  # no pidfd (old kernel): poll
        while True:
            time.sleep(1.0)
            try:
                os.kill(engine_pid, 0)
            except ProcessLookupError:
                os._exit(0)
            except PermissionError:
                pass
    select.select([fd], [], [])  # readable once the engine has exited
    os._exit(0)


class ProcessPool:
    """A named process pool that replaces its executor when a child dies.

    Thread-safe: the engine's threads submit concurrently. `submit` returns the executor's
    future; a future that fails with `BrokenProcessPool` has already triggered the rebuild by the
    time the caller sees it. `call` blocks (releasing the GIL) and returns the result."""

    def __init__(self, name: str, processes: int, preload: Callable[[], None] | None = None,
                 forkserver_preload: Iterable[str] = FORKSERVER_PRELOAD) -> None:
        if processes < 1:
            raise ValueError(f"the {name} pool needs at least one process")
        self.name = name
        self.processes = processes
        self._preload = preload
        self._forkserver_preload = list(forkserver_preload)
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._closed = False
        self._inflight = 0
        self.rebuilds = 0

    def start(self) -> None:
        with self._lock:
            if self._executor is None and not self._closed:
                self._executor = self._new_executor()

    def _new_executor(self) -> ProcessPoolExecutor:
        start_forkserver(self._forkserver_preload)
        ctx = multiprocessing.get_context("forkserver")
        return ProcessPoolExecutor(self.processes, mp_context=ctx, initializer=child_init,
                                   initargs=(os.getpid(), self._preload))

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Submit `fn(*args)`; raises BrokenProcessPool (after rebuilding) when the pool is broken."""
        with self._lock:
            if self._closed or self._executor is None:
                raise RuntimeError(f"the {self.name} pool is not running")
            executor = self._executor
            self._inflight += 1
        try:
            future = executor.submit(fn, *args)
        except BrokenProcessPool:
            self._settled(executor, None)
            raise
        except BaseException:
            self._settled(executor, None)
            raise
        future.add_done_callback(functools.partial(self._settled, executor))
        return future

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(*args)` in a child and wait for its result."""
        future = self.submit(fn, *args)
        try:
            return future.result()
        except Exception:
            raise
        except BaseException as exc:  # e.g. a KeyboardInterrupt sent back: must not end the caller's thread
            raise RuntimeError(f"{self.name} process interrupted: {type(exc).__name__}: {exc}") from exc

    def _settled(self, executor: ProcessPoolExecutor, future: Future[Any] | None) -> None:
        with self._lock:
            self._inflight -= 1
        broken = future is None and getattr(executor, "_broken", False)
        if future is not None and not future.cancelled():
            broken = isinstance(future.exception(), BrokenProcessPool)
        if broken:
            self._replace(executor)

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        """Start a fresh executor once per broken one (several callers see the same breakage)."""
        with self._lock:
            if self._executor is not broken or self._closed:
                return
            log.error("a %s process died; starting a new %s pool", self.name, self.name)
            self._executor = self._new_executor()
            self.rebuilds += 1
        broken.shutdown(wait=False, cancel_futures=True)

    @property
    def inflight(self) -> int:
        """Calls submitted and not yet finished (tests wait on it before killing a child)."""
        with self._lock:
            return self._inflight

    def pids(self) -> list[int]:
        """The pids of the current executor's live children (started lazily, on demand)."""
        with self._lock:
            executor = self._executor
        procs = dict(getattr(executor, "_processes", None) or {}) if executor is not None else {}
        return [pid for pid, proc in procs.items() if proc.is_alive()]

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
