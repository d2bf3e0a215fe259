"""The fleet collector: polls every enabled Source and publishes each as an engine on the wire.

It runs inside the serving process (`runprover`, `watchfleet`) on an asyncio loop of its own, in
one thread, so nothing a source does (hang, flood, garbage) can hold the web server's loop; its
snapshots enter the same path as local engines (gpu_engine/wire.py: the cache and the channel
group), with `engine_id` = the source's name. Per source: one request in flight, timeouts from
the poll interval, jittered exponential backoff while failing, an 8 MiB answer cap, a JSON depth
cap and caps on what one answer may hold (statuspanel/fleet/bounds.py). State changes go to a
`StateChangeLog` (statuspanel/fleet/events.py): batched, at most a burst per source and window.
JSON decoding and the adapter of answers over 64 KiB, and every database call, run in a small
thread pool (a typical status document, a few KiB, is decoded in place). The
Source table is re-read every `reload_secs`: sources added, removed or edited take effect without
a restart. Delivery is the publisher's (gpu_engine/delivery.py: `attach_loop(server_loop)` for the
in-memory layer) under `COLLECTOR_POLICY`: a send while the same source's previous one is still in
flight is dropped (the collector's loop serves every source and must never block; the cache holds
the latest and the next heartbeat sends it), and a cancelled send is not an error (only the loop
it ran on going away cancels it).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, cast

from gpu_engine import wire
from gpu_engine.delivery import Busy, Delivery, SendPolicy
from statuspanel.fleet import sources as source_table
from statuspanel.fleet.bounds import SourceLimits
from statuspanel.fleet.cuzk_grpc import source as grpc_source
from statuspanel.fleet.errors import Unreachable
from statuspanel.fleet.events import DEFAULT_BURST, DEFAULT_WINDOW_SECS, StateChange, StateChangeLog
from statuspanel.fleet.history import FleetHistory, prune_minutes
from statuspanel.fleet.poller import MAX_DEPTH, SourceState, backoff_delay, decode
from statuspanel.fleet.shape import Malformed
from statuspanel.fleet.transport import MAX_BYTES, SourceConfig, fetch, make_client, tls_context
from statuspanel.fleet.vocabulary import SOURCE_MALFORMED, SOURCE_UNREACHABLE

if TYPE_CHECKING:
    import httpx
    from channels.layers import BaseChannelLayer
    from django.core.cache.backends.base import BaseCache

    from gpu_engine.schema import SourceSnapshot

log = logging.getLogger(__name__)

TICK_SECS = 0.25          # how often stale states and heartbeats are refreshed
PRUNE_EVERY_SECS = 3600.0
COLLECTOR_POLICY = SendPolicy(busy=Busy.DROP_STALE, cancelled_is_error=False)
# Answers up to this size are decoded on the collector's own loop; larger ones in its thread pool.
INLINE_DECODE_BYTES = 64 * 1024


class FleetCollector:
    """Polls the fleet; `start()` runs it in a thread of its own, `stop()` ends it."""

    def __init__(self, *, reload_secs: float = 2.0, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH,
                 channel_layer: BaseChannelLayer | None = None, cache: BaseCache | None = None,
                 load_sources: Callable[[], list[SourceConfig]] | None = None,
                 record_state_change: Callable[..., None] | None = None, threads: int = 4,
                 event_retention_days: float | None = None, limits: SourceLimits | None = None,
                 history: FleetHistory | None = None) -> None:
        self.reload_secs = reload_secs
        # What one answer may hold (workers, pipelines, partitions), checked before the adapter runs.
        self.limits = limits or SourceLimits.from_settings()
        # Kept state changes older than this are pruned hourly (0: never); no pruning without the table.
        if event_retention_days is None:
            event_retention_days = _setting("FLEET_EVENT_RETENTION_DAYS", 30.0) if load_sources is None else 0.0
        self.event_retention_days = event_retention_days
        # Per-minute history of each source (statuspanel/fleet/history.py): kept with the table only.
        self.history = history if history is not None else (FleetHistory() if load_sources is None else None)
        self.history_retention_days = _setting("TELEMETRY_RETENTION_DAYS", 7.0) if load_sources is None else 0.0
        self._next_prune = 0.0
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.delivery = Delivery(COLLECTOR_POLICY, channel_layer=channel_layer, cache=cache, what="fleet snapshot")
        self._load = load_sources or source_table.load_sources
        # State changes: batched, at most a burst per source and window (a flapping source is summarised).
        if record_state_change is None:
            write = source_table.record_state_changes
        else:  # one call per kept change (tests record them without a database)
            def write(events: list[StateChange], current: list[StateChange]) -> None:
                for c in events:
                    record_state_change(c.source_id, c.name, c.previous, c.state, c.reason, c.error, c.at)
        self.events = StateChangeLog(write, burst=int(_setting("FLEET_EVENT_BURST", DEFAULT_BURST)),
                                     window_secs=_setting("FLEET_EVENT_WINDOW_SECS", DEFAULT_WINDOW_SECS))
        self._executor = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="fleet-io")
        # Pinned keys and the hourly prune are written by one thread of their own.
        self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="fleet-db")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self.states: dict[str, SourceState] = {}        # by source name
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._clients: dict[str, httpx.AsyncClient | grpc_source.CuzkGrpcSource] = {}
        self.reloads = 0
        self.published = 0

    # -- wiring ---------------------------------------------------------------------------------
    def attach_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Deliver group messages through `loop` (the server's), as the in-memory layer requires."""
        self.delivery.attach_loop(loop)

    @property
    def channel_layer(self) -> BaseChannelLayer | None:
        return self.delivery.channel_layer

    @property
    def cache(self) -> BaseCache:
        return cast("BaseCache", self.delivery.cache)

    @property
    def send_errors(self) -> int:
        return self.delivery.errors

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> FleetCollector:
        if self._thread is not None:
            raise RuntimeError("collector already started")
        self.events.start()
        if self.history is not None:
            self.history.start()
        self._thread = threading.Thread(target=self._main, name="fleet-collector", daemon=True)
        self._thread.start()
        self._ready.wait(5)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self.delivery.stopping()
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stopping.set)
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._writer.shutdown(wait=True)
        self.events.stop()  # the last state changes (and open flapping summaries) are kept
        if self.history is not None:
            self.history.stop()  # the open minutes are kept too

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self.run())
        finally:
            loop.close()

    async def run(self) -> None:
        """Reload the table, refresh states and heartbeats, until stopped; then close everything."""
        self._stopping = asyncio.Event()
        self._ready.set()
        next_reload = 0.0
        try:
            while not self._stopping.is_set():
                now = time.monotonic()
                if now >= next_reload:
                    await self._reload()
                    next_reload = now + self.reload_secs
                await self._refresh()
                try:
                    await asyncio.wait_for(self._stopping.wait(), TICK_SECS)
                except asyncio.TimeoutError:
                    pass
        finally:
            for name in list(self._tasks):
                await self._drop(name, forget=False)
            self.delivery.close()

    # -- the table ------------------------------------------------------------------------------
    async def _reload(self) -> None:
        try:
            configs = await self._in_thread(self._load)
        except Exception:  # a database hiccup keeps the sources already running
            log.exception("fleet: reading the source table failed")
            return
        if self.reloads == 0:
            await self._in_thread(tls_context)  # loading the CA bundle once, off the loop
        self.reloads += 1
        if (self.event_retention_days or self.history_retention_days) and time.monotonic() >= self._next_prune:
            self._next_prune = time.monotonic() + PRUNE_EVERY_SECS
            self._writer.submit(self._prune_safely)
        wanted = {cfg.name: cfg for cfg in configs}
        for name in [n for n in self._tasks if n not in wanted]:
            await self._drop(name, forget=True)
        for name, cfg in wanted.items():
            state = self.states.get(name)
            if state is None:
                self.states[name] = SourceState(cfg)
                self._launch(cfg)
            elif state.cfg != cfg:
                only_pin = _without_pin(state.cfg) == _without_pin(cfg)
                state.cfg = cfg
                if not only_pin:  # an edit: a fresh client and poll; the state's history stays
                    await self._stop_task(name)
                    self._launch(cfg)

    def _launch(self, cfg: SourceConfig) -> None:
        def on_pin(key: str) -> None:
            self._writer.submit(source_table.pin_host_key, cfg.id, key)

        client = grpc_source.CuzkGrpcSource(cfg, on_pin) if cfg.grpc_target else make_client(cfg, on_pin)
        self._clients[cfg.name] = client
        self._tasks[cfg.name] = asyncio.get_running_loop().create_task(self._poll_forever(cfg.name, client),
                                                                        name=f"fleet-{cfg.name}")

    async def _stop_task(self, name: str) -> None:
        task = self._tasks.pop(name, None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        client = self._clients.pop(name, None)
        if client is not None:
            try:
                await asyncio.wait_for(client.aclose(), 2.0)
            except Exception:  # noqa: BLE001 - closing a dead connection must not stop the collector
                pass

    async def _drop(self, name: str, *, forget: bool) -> None:
        await self._stop_task(name)
        self.states.pop(name, None)
        if forget:  # a removed source leaves the panel now, not when its TTL runs out
            if self.history is not None:
                self.history.forget(name)
            await self._in_thread(wire.forget_engine, self.cache, name)

    # -- polling --------------------------------------------------------------------------------
    async def _poll_forever(self, name: str, client: httpx.AsyncClient | grpc_source.CuzkGrpcSource) -> None:
        state = self.states[name]
        while True:
            cfg = state.cfg
            started = time.monotonic()
            await self._poll_once(state, client)
            await self._publish(state)
            if state.failure is None:
                delay = cfg.interval_secs - (time.monotonic() - started)
            else:
                delay = backoff_delay(cfg, state.failures)
            await asyncio.sleep(max(delay, 0.05))

    async def _poll_once(self, state: SourceState, client: httpx.AsyncClient | grpc_source.CuzkGrpcSource) -> None:
        cfg = state.cfg
        started = time.monotonic()
        try:
            snap: SourceSnapshot
            # a cuzk daemon's gRPC API (with its HTTP status, if polled too): _launch made its client
            # for the source's gRPC target
            if isinstance(client, grpc_source.CuzkGrpcSource):
                snap = await grpc_source.poll(client, cfg, self.max_bytes, self.max_depth, self._in_thread,
                                              self.limits)
            else:
                body = await fetch(client, cfg, self.max_bytes)
                if len(body) <= INLINE_DECODE_BYTES:  # well under a millisecond: cheaper than a thread hop
                    snap = decode(body, cfg.kind, self.max_depth, self.limits)
                else:
                    snap = await self._in_thread(decode, body, cfg.kind, self.max_depth, self.limits)
        except Unreachable as exc:
            state.observe_failure(SOURCE_UNREACHABLE, exc.reason, str(exc), _ms(started))
        except Malformed as exc:
            state.observe_failure(SOURCE_MALFORMED, exc.reason, str(exc), _ms(started))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug here must not end the source's polling
            log.exception("fleet source %s: unexpected error", cfg.name)
            state.observe_failure(SOURCE_UNREACHABLE, "network", f"network: {type(exc).__name__}", _ms(started))
        else:
            state.observe_ok(snap, _ms(started))
            if self.history is not None:
                self.history.observe(cfg.name, snap, cfg.interval_secs)

    async def _refresh(self) -> None:
        """Republish sources whose heartbeat is due or whose state moved (e.g. a hanging poll went stale)."""
        now = time.monotonic()
        for state in list(self.states.values()):
            if state.due(now):
                await self._publish(state)

    # -- publishing -----------------------------------------------------------------------------
    async def _publish(self, state: SourceState) -> None:
        cfg = state.cfg
        snap = state.snapshot()
        source = snap["source"]
        current = (source["state"], source["reason"] or "")
        previous = state.published_state
        state.published_state = current
        state.last_publish = time.monotonic()
        if previous != current:
            self.events.add(StateChange(cfg.id, cfg.name, previous[0] if previous else "", current[0], current[1],
                                        source["error"] or "", time.time()))
        try:
            await self._in_thread(self.delivery.store, snap)
            self.delivery.send(wire.snapshot_message(cfg.name, snap["seq"], snap))
            self.published += 1
        except Exception:  # noqa: BLE001 - the panel going dark must never stop the collector; logged by failed()
            self.delivery.failed(cfg.name)

    def _prune_safely(self) -> None:
        try:
            if self.event_retention_days:
                source_table.prune_events(self.event_retention_days)
            if self.history_retention_days:
                prune_minutes(self.history_retention_days)
        except Exception:  # an old row left for the next hour must not stop the collector
            log.exception("fleet: pruning old state changes or history minutes failed")

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        try:
            future = loop.run_in_executor(self._executor, fn, *args)
        except RuntimeError:  # the executor is shut down: the process is exiting, and this task ends with it
            raise asyncio.CancelledError from None
        return await future


def _setting(name: str, default: float) -> float:
    from django.conf import settings

    return float(getattr(settings, name, default))


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000.0


def _without_pin(cfg: SourceConfig) -> tuple[Any, ...]:
    return tuple(getattr(cfg, f) for f in cfg.__dataclass_fields__ if f != "ssh_host_key")
