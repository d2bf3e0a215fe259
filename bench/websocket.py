"""WebSocket fan-out benchmark: N clients on one Daphne process while the publisher sends 10/s.

    .venv/bin/python bench/websocket.py --clients 200 500 [--seconds 10] [--format html|json]
        [--compression on off] [--processes 1 2] [--frames full patch] [--client-procs K]

For each (processes, compression, N) it starts fresh server processes (the guarded Daphne,
vastmanager.server, serving the real ASGI app, with a SnapshotPublisher attached to the first
server's loop, as runprover does in the embedded mode, fed by a tracker that changes ~50 times a
second so the publisher runs at its cap), connects N clients, and prints the delivery latency
(client receive time minus the snapshot's `published_at`, same machine clock), frames delivered vs
published, wire bytes per client per second, the server's and the clients' CPU, and the server's
CPU per frame delivered (us/frame: the figure least moved by other load on a shared machine).

`--processes N` (N > 1) serves from N processes sharing the port as `servepanel --processes N` does
(SO_REUSEPORT sockets, the Redis pub/sub channel layer on REDIS_URL, default redis://127.0.0.1:6379,
under a private key prefix). `--compression on` makes the clients offer permessage-deflate (the
server accepts it, WS_COMPRESSION), `off` makes them offer nothing. `--frames full patch`: whole
frames and patch frames (`?patch=1`) side by side, each in a fresh server (`--patch` alone: patch
frames only); a patch's latency is read off the section's `data-published-at` attribute (HTML) or
the `published_at` it sets (JSON).

The clients run on the same machine, in `--client-procs` processes (default 1). By default they are
lean readers (tests/ws_reader.py: the handshake, then frames parsed in place, the latency read off
the bytes); `--client websockets` uses the websockets library (reading frames as bytes), whose ~70 us
of Python per frame made one process's pass over a burst of 500 frames most of the latency measured.
`BENCH_PROFILE=<path>` writes the (first) server's cProfile stats when it stops.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.credentials import TOKEN  # the token rule wants at least 16 characters
from tests.process_support import free_port, stop_now, wait_http


# -- server side ----------------------------------------------------------------------------------
def _churn(tracker, stop: threading.Event, changes_per_sec: float) -> None:
    """Walk one 16-partition job after another through every phase, forever."""
    n = 0
    pause = 1.0 / changes_per_sec
    while not stop.is_set():
        job = f"ps-snap-1000-{n}-7"
        tracker.register_job(job, "snap-update", 16)
        tracker.set_queue_depth(n % 5)
        for p in range(16):
            for step in ("synth_start", "synth_end", "gpu_start", "finalize_start", "gpu_end"):
                if stop.wait(pause):
                    return
                if step == "synth_start":
                    tracker.partition_synth_start(job, p)
                elif step == "synth_end":
                    tracker.partition_synth_end(job, p)
                elif step == "gpu_start":
                    tracker.partition_gpu_start(job, p, p % 2)
                elif step == "finalize_start":
                    tracker.partition_finalize_start(job, p, p % 2)
                else:
                    tracker.partition_gpu_end(job, p, p % 2)
        tracker.job_completed(job, True)
        n += 1


def serve(port: int, rate: float, fd: int | None = None, publish: bool = True) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vastmanager.settings")
    if os.environ.get("BENCH_LAYER"):
        from django.conf import settings

        settings.CHANNEL_LAYERS = {"default": {"BACKEND": os.environ["BENCH_LAYER"]}}
    django.setup()
    from daphne import server as daphne_server

    from gpu_engine.budget import MemoryBudget
    from gpu_engine.publisher import SnapshotPublisher
    from gpu_engine.tracker import StatusTracker
    from vastmanager.asgi import application
    from vastmanager.server import build_server

    tracker = StatusTracker(budget=MemoryBudget(64 << 30), synth_max=4, backend="cpu", grace_secs=5)
    tracker.register_workers([(0, 0), (1, 0)])
    pub = SnapshotPublisher(tracker, "bench-engine", max_rate=rate, heartbeat_secs=2.0)
    stop = threading.Event()

    def ready() -> None:
        if publish:
            pub.attach_loop(daphne_server.twisted_loop)
            pub.start()
            threading.Thread(target=_churn, args=(tracker, stop, 50.0), daemon=True).start()
        print("READY", flush=True)

    server = build_server(application, "127.0.0.1", port, ready_callable=ready, signal_handlers=True,
                          file_descriptor=fd)
    profile_to = os.environ.get("BENCH_PROFILE")  # a path: the server's cProfile stats, written when it stops
    if profile_to:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        server.run()
    finally:
        if profile_to:
            profiler.disable()
            profiler.dump_stats(profile_to)
        stop.set()
        pub.stop()


# -- client side ----------------------------------------------------------------------------------
_NUMBER = re.compile(r"[0-9.eE+-]*")
_NUMBER_BYTES = re.compile(rb"[0-9.eE+-]*")
_PUBLISHED_AT = ('"published_at":', '"data-published-at":"')  # a snapshot's key; a patch's section attribute


def _published_at(text: str | bytes | bytearray, start: int = 0, end: int | None = None) -> float | None:
    """The snapshot's `published_at` in a frame (text[start:end]): a snapshot frame's key, a JSON patch's
    `set` key, or an HTML patch's `"attrs": {"data-published-at": "<epoch>"}` (templates/statuspanel/
    _engine.html); found near the end where it sits, without parsing or copying the frame."""
    end = len(text) if end is None else end
    for key in _PUBLISHED_AT:
        i = text.rfind(key, start, end) if isinstance(text, str) else text.rfind(key.encode(), start, end)
        if i >= 0:
            break
    else:
        return None
    number = (_NUMBER if isinstance(text, str) else _NUMBER_BYTES).match(text, i + len(key), end)
    try:
        return float(number.group()) if number is not None else None
    except ValueError:  # an empty attribute (a snapshot without published_at)
        return None


def _counting_connection(wire: list[int], counting: list[bool]):
    """A websockets connection class that adds the bytes it reads off the socket to wire[0] while counting."""
    from websockets.asyncio.client import ClientConnection

    class Counting(ClientConnection):
        def data_received(self, data: bytes) -> None:
            if counting[0]:
                wire[0] += len(data)
            super().data_received(data)

    return Counting


async def client(url: str, on_frame: Callable[[Any, float], None], counting: list[bool], ready: asyncio.Event,
                 errors: list[str], compression: bool = False, wire: list[int] | None = None,
                 raw: bool = False) -> None:
    """One WebSocket client: hands each frame and its arrival time to `on_frame` while counting (the
    frame as text, or with `raw` as its UTF-8 bytes: the clients share the server's cores, and a
    decode per frame per client is client work the figures need not carry)."""
    from urllib.parse import urlsplit

    import websockets

    origin = f"http://{urlsplit(url).netloc}"  # the page's own origin, port included (the server checks it)
    connection = _counting_connection(wire, counting) if wire is not None else None
    try:
        async with websockets.connect(url, origin=origin, max_size=None, open_timeout=60, ping_interval=None,
                                      compression="deflate" if compression else None,
                                      create_connection=connection) as ws:
            ready.set()
            while True:
                data = await ws.recv(decode=not raw)
                now = time.time()
                if counting[0]:
                    on_frame(data, now)
    except websockets.ConnectionClosedOK:
        pass  # the server went away at the end of a run
    except Exception as exc:  # noqa: BLE001 - reported in the figures
        errors.append(type(exc).__name__)
        ready.set()  # a refused client must not hold the others' start for two minutes


async def lean_client(port: int, path: str, latencies: list[float], counting: list[bool], ready: asyncio.Event,
                      errors: list[str], compression: bool = False, wire: list[int] | None = None) -> None:
    """One lean client (tests/ws_reader.py): each frame's latency read in place, nothing decoded or copied."""
    from tests.ws_reader import read_messages

    def on_message(buf: bytes | bytearray, start: int, end: int, now: float) -> None:
        if counting[0]:
            published = _published_at(buf, start, end)
            if published is not None:
                latencies.append(now - published)

    reader = None
    try:
        reader = await read_messages(port, path, on_message, compression=compression, wire=wire, counting=counting)
        ready.set()
        await reader.closed
    except Exception as exc:  # noqa: BLE001 - reported in the figures
        errors.append(type(exc).__name__)
        ready.set()
    finally:
        if reader is not None and reader.transport is not None:
            reader.transport.close()


def _record_latency(latencies: list[float]) -> Callable[[str | bytes, float], None]:
    def on_frame(text: str | bytes, now: float) -> None:
        published = _published_at(text)
        if published is not None:
            latencies.append(now - published)

    return on_frame


def _tree_cpu(proc) -> float:
    """CPU seconds of a process's children (runprover's synthesis pool)."""
    import psutil

    total = 0.0
    for child in proc.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:  # a child may exit between listing and reading
            pass
    return total


def _cpu(procs) -> float:
    return sum(sum(p.cpu_times()[:2]) for p in procs)


async def _client_share(url: str, n: int, compression: bool, conn: Any, kind: str = "lean") -> None:
    """One client process's share: connect `n` clients, say so, count between the parent's start and
    stop, then send back the latencies, wire bytes, errors and this process's CPU in the window."""
    import psutil

    latencies: list[float] = []
    counting = [False]
    errors: list[str] = []
    wire = [0]
    tasks = []
    loop = asyncio.get_running_loop()
    for start in range(0, n, 50):  # connect in batches so the handshakes do not time out
        batch = []
        for _ in range(start, min(n, start + 50)):
            ev = asyncio.Event()
            batch.append(ev)
            if kind == "lean":
                split = urlsplit(url)
                one = lean_client(split.port or 80, f"{split.path}?{split.query}", latencies, counting, ev, errors,
                                  compression, wire)
            else:
                one = client(url, _record_latency(latencies), counting, ev, errors, compression, wire, raw=True)
            tasks.append(asyncio.create_task(one))
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in batch)), 120)
    conn.send("ready")
    me = psutil.Process()
    assert await loop.run_in_executor(None, conn.recv) == "start"
    c0 = sum(me.cpu_times()[:2])
    counting[0] = True
    assert await loop.run_in_executor(None, conn.recv) == "stop"
    counting[0] = False
    cpu = sum(me.cpu_times()[:2]) - c0
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    conn.send({"latencies": latencies, "wire": wire[0], "errors": errors, "cpu": cpu})


def _client_process(url: str, n: int, compression: bool, conn: Any, kind: str) -> None:
    asyncio.run(_client_share(url, n, compression, conn, kind))


def run_clients(port: int, n: int, seconds: float, fmt: str, server_pids: list[int], rate: float,
                compression: bool = False, patch: bool = False, client_procs: int = 1, kind: str = "lean") -> dict:
    """N clients spread over `client_procs` processes (each an event loop of its own: with one, the
    clients' own reading is what a burst of 500 frames waits on, not the server)."""
    import multiprocessing

    import psutil

    url = f"ws://127.0.0.1:{port}/ws/status/?token={TOKEN}&format={fmt}&patch={int(patch)}"
    ctx = multiprocessing.get_context("fork")  # no loop or thread runs here yet
    shares = [n // client_procs + (1 if i < n % client_procs else 0) for i in range(client_procs)]
    pipes, procs = [], []
    for share in shares:
        here, there = ctx.Pipe()
        proc = ctx.Process(target=_client_process, args=(url, share, compression, there, kind), daemon=True)
        proc.start()
        pipes.append(here)
        procs.append(proc)
    try:
        for pipe in pipes:
            if not pipe.poll(300) or pipe.recv() != "ready":
                raise RuntimeError("a client process did not connect its clients")
        time.sleep(2.0)  # warm-up
        servers = [psutil.Process(pid) for pid in server_pids]
        server = servers[0]
        s0, t0, tree0 = _cpu(servers), time.monotonic(), _tree_cpu(server)
        for pipe in pipes:
            pipe.send("start")
        time.sleep(seconds)
        for pipe in pipes:
            pipe.send("stop")
        wall = time.monotonic() - t0
        s1, tree1 = _cpu(servers), _tree_cpu(server)
        results = [pipe.recv() for pipe in pipes]
    finally:
        for proc in procs:
            proc.join(30)
            if proc.is_alive():
                proc.kill()
    lat = sorted(x for r in results for x in r["latencies"])
    q = statistics.quantiles(lat, n=100) if len(lat) >= 2 else [float("nan")] * 99
    return {
        "clients": n, "frames": len(lat), "expected": int(n * rate * wall),
        "errors": sum(len(r["errors"]) for r in results),
        "server_cpu_children_pct": 100 * (tree1 - tree0) / wall,
        "p50_ms": 1000 * q[49], "p95_ms": 1000 * q[94], "p99_ms": 1000 * q[98], "max_ms": 1000 * lat[-1] if lat else 0,
        "server_cpu_pct": 100 * (s1 - s0) / wall, "server_us_per_frame": 1e6 * (s1 - s0) / max(len(lat), 1),
        "client_cpu_pct": 100 * sum(r["cpu"] for r in results) / wall,
        "bytes_per_client_s": sum(r["wire"] for r in results) / max(n, 1) / wall,
    }


def deflate_cost(frames: int = 200) -> None:
    """CPU per frame of permessage-deflate: autobahn's own (every client compresses every frame, with
    context takeover) against the shared compression (once per frame, then a cache lookup per client)."""
    import zlib

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vastmanager.settings")
    django.setup()
    from gpu_engine.budget import MemoryBudget
    from gpu_engine.tracker import StatusTracker
    from statuspanel.stream.frames import snapshot_frame
    from vastmanager.wscompress import SharedDeflate

    payloads = []
    for n in range(frames):  # the synthetic server's frames: one 16-partition job at some phase
        tracker = StatusTracker(budget=MemoryBudget(64 << 30), synth_max=4, backend="cpu", grace_secs=5)
        tracker.register_workers([(0, 0), (1, 0)])
        job = f"ps-snap-1000-{n}-7"
        tracker.register_job(job, "snap-update", 16)
        for p in range(n % 16):
            tracker.partition_synth_start(job, p)
        snap = tracker.snapshot()
        snap.update(engine_id="bench-engine", seq=n, published_at=time.time())
        payloads.append(snapshot_frame(snap, with_html=True).encode())
    size = statistics.mean(len(p) for p in payloads)
    per_client = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15, 8)
    t0 = time.process_time()
    out = sum(len(per_client.compress(p) + per_client.flush(zlib.Z_SYNC_FLUSH)) for p in payloads)
    takeover = (time.process_time() - t0) / frames
    shared = SharedDeflate()
    t0 = time.process_time()
    fresh = sum(len(shared.compress(p, 15, 8)) for p in payloads)
    once = (time.process_time() - t0) / frames
    t0 = time.process_time()
    for p in payloads:
        shared.compress(bytes(p), 15, 8)  # another client's copy of the same frame: a lookup
    lookup = (time.process_time() - t0) / frames
    print(f"frame {size / 1024:.1f} KB html; per-client deflate (context takeover): {takeover * 1e6:.0f} us/frame "
          f"-> {size / (out / frames):.1f}x; shared (no takeover): {once * 1e6:.0f} us once per frame "
          f"-> {size / (fresh / frames):.1f}x, then {lookup * 1e6:.1f} us per further client")
    print(f"at 10 frames/s: per-client deflate costs {takeover * 10 * 100:.1f}% of a core per client; "
          f"shared costs {lookup * 10 * 100:.3f}% per client")


def _start_synthetic(port: int, rate: float, processes: int, env: dict) -> list[subprocess.Popen]:
    """One server process, or `processes` of them on SO_REUSEPORT sockets (the first one publishes)."""
    if processes == 1:
        argv = [sys.executable, __file__, "--serve", "--port", str(port), "--rate", str(rate)]
        procs = [subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)]
    else:
        from vastmanager.serving import reuseport_sockets

        sockets = reuseport_sockets("127.0.0.1", port, processes)
        procs = []
        for index, sock in enumerate(sockets):
            argv = [sys.executable, __file__, "--serve", "--port", str(port), "--rate", str(rate),
                    "--fd", str(sock.fileno()), *(["--no-publish"] if index else [])]
            procs.append(subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True,
                                          start_new_session=True, pass_fds=(sock.fileno(),)))
        for sock in sockets:
            sock.close()
    for proc in procs:
        line = proc.stdout.readline()
        if "READY" not in line:
            for other in procs:
                stop_now(other)
            raise RuntimeError(f"server did not start: {line!r}")
    return procs


def bench_one(n: int, seconds: float, fmt: str, rate: float, server: str, compression: bool = False,
              processes: int = 1, patch: bool = False, client_procs: int = 1, client_kind: str = "lean") -> dict:
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="vm-bench-") as data:
        env = dict(os.environ, VASTMANAGER_DATA_DIR=data, VASTMANAGER_TOKEN=TOKEN, LOG_LEVEL="WARNING",
                   PYTHONPATH=str(ROOT), VASTMANAGER_PARAMS_DIR=str(ROOT / "data" / "params"))
        for var in ("REDIS_URL", "DATABASE_URL"):
            env.pop(var, None)
        if processes > 1:  # one Redis, a key prefix of this run's own
            env["REDIS_URL"] = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379")
            env["REDIS_PREFIX"] = f"vm-bench-{os.getpid()}-{port}"
        if server == "runprover":
            # The real thing: engine proving demo jobs (synthesis in worker processes) and Daphne in one
            # process; the publisher sends on every change, at most 10/s.
            manage = [sys.executable, str(ROOT / "manage.py")]
            subprocess.run(manage + ["migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
            procs = [subprocess.Popen(manage + ["runprover", "--demo", "--backend", "cpu", "--bind",
                                                f"127.0.0.1:{port}"],
                                      cwd=ROOT, env=env, stdout=subprocess.DEVNULL, start_new_session=True)]
        else:
            procs = _start_synthetic(port, rate, processes, env)
        try:
            if server == "runprover":
                wait_http(f"http://127.0.0.1:{port}/healthz", procs[0])
            return run_clients(port, n, seconds, fmt, [p.pid for p in procs], rate, compression, patch,
                               client_procs, client_kind)
        finally:
            for proc in procs:
                stop_now(proc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, nargs="+", default=[100, 500])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--format", choices=["html", "json"], default="html")
    ap.add_argument("--rate", type=float, default=10.0, help="publisher max snapshots per second")
    ap.add_argument("--patch", action="store_true", help="clients ask for patch frames (?patch=1): "
                    "the same as --frames patch")
    ap.add_argument("--frames", choices=["full", "patch"], nargs="+", default=None,
                    help="whole frames (full), patch frames (patch, ?patch=1), or both side by side in one run")
    ap.add_argument("--compression", choices=["on", "off"], nargs="+", default=["off"],
                    help="clients offer permessage-deflate (on) or nothing (off); both: side by side")
    ap.add_argument("--processes", type=int, nargs="+", default=[1],
                    help="server processes sharing the port (over 1: the Redis layer, synthetic server only)")
    ap.add_argument("--client-procs", type=int, default=1,
                    help="processes the clients are spread over (each its own event loop); default 1")
    ap.add_argument("--client", choices=["lean", "websockets"], default="lean",
                    help="lean: tests/ws_reader.py (frames parsed in place; default); websockets: the full "
                         "client library, reading frames as bytes")
    ap.add_argument("--server", choices=["synthetic", "runprover"], default="synthetic",
                    help="synthetic: Daphne + publisher fed by a churning tracker (fan-out alone); "
                         "runprover: `runprover --demo --backend cpu` (fan-out while proving)")
    ap.add_argument("--layer", default="", help="channel layer class for the synthetic server (A/B), e.g. "
                    "channels.layers.InMemoryChannelLayer; default: the settings' layer")
    ap.add_argument("--deflate-cost", action="store_true",
                    help="only measure the CPU of permessage-deflate per frame and per client, then exit")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--fd", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--no-publish", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.port, args.rate, args.fd, not args.no_publish)
        return
    if args.deflate_cost:
        deflate_cost()
        return
    if args.layer:
        os.environ["BENCH_LAYER"] = args.layer
    if args.client_procs < 1 or any(n < args.client_procs for n in args.clients):
        ap.error("--client-procs must be at least 1 and at most the smallest --clients")
    if args.server == "runprover" and args.processes != [1]:
        ap.error("--processes applies to the synthetic server only")
    kinds = args.frames or (["patch"] if args.patch else ["full"])
    print(f"server={args.server} layer={args.layer or 'settings'} format={args.format} frames={'/'.join(kinds)} "
          f"rate<={args.rate}/s "
          f"window={args.seconds}s cores={os.cpu_count()} clients={args.client} x {args.client_procs} process(es)")
    print(f"{'procs':>5} {'deflate':>7} {'kind':>5} {'clients':>7} {'frames':>8} {'expected':>8} {'deliv%':>6} "
          f"{'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8} {'KB/cl/s':>8} {'server CPU':>10} {'children':>8} "
          f"{'us/frame':>8} {'client CPU':>10} {'errors':>6}")
    for processes in args.processes:
        for compression in args.compression:
            for n, kind in ((n, kind) for n in args.clients for kind in kinds):
                r = bench_one(n, args.seconds, args.format, args.rate, args.server, compression == "on", processes,
                              kind == "patch", args.client_procs, args.client)
                delivered = 100 * r["frames"] / max(r["expected"], 1)
                print(f"{processes:>5} {compression:>7} {kind:>5} {r['clients']:>7} {r['frames']:>8} "
                      f"{r['expected']:>8} {delivered:>5.0f}% {r['p50_ms']:>8.1f} {r['p95_ms']:>8.1f} "
                      f"{r['p99_ms']:>8.1f} "
                      f"{r['max_ms']:>8.1f} {r['bytes_per_client_s'] / 1024:>8.1f} {r['server_cpu_pct']:>9.0f}% "
                      f"{r['server_cpu_children_pct']:>7.0f}% {r['server_us_per_frame']:>8.0f} "
                      f"{r['client_cpu_pct']:>9.0f}% {r['errors']:>6}",
                      flush=True)


if __name__ == "__main__":
    main()
