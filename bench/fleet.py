"""Fleet benchmark: one serving dashboard (`manage.py watchfleet`) whose collector watches N cuzk-like
servers on loopback, while browsers-worth of WebSocket clients follow the panel.

    .venv/bin/python bench/fleet.py [--sources 100] [--interval 1.5] [--seconds 30] [--clients 1 10]
                                    [--grpc [SHARE]]

The N servers (tests/fleet/cuzk_server.py, the fixture with a moving clock) run in one helper process
of their own, so their CPU is not the dashboard's. With `--grpc`, a share of them (half when no share
is given) are cuzk gRPC daemons instead (tests/fleet/cuzk_grpc_server.py, the scripted daemon),
added with `addsource --grpc`, and the poll latency is also given for each half. Once every source
is online, over the window it prints: the dashboard process's CPU (share of one core; it holds the
collector, Daphne and the renders), the collector's poll latency p50/p95 (each snapshot's
`source.poll_ms`, one per poll), the snapshots published per second, WebSocket bytes and frames per
client per second (the page's format, with the rendered HTML, and `?format=json`), and the
`/healthz` round trip meanwhile.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
_spec = importlib.util.spec_from_file_location("bench_websocket", ROOT / "bench" / "websocket.py")
wsb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wsb)

from tests.process_support import free_port, stop_now, wait_http  # after the path is set

TOKEN = "bench-fleet-operator-token"


# -- the fleet of cuzk-like servers (a helper process) ---------------------------------------------
def serve_fleet(n: int, grpc_share: float = 0.0) -> None:
    from tests.fleet.cuzk_server import CuzkServer

    n_grpc = grpc_count(n, grpc_share)
    servers: list = [CuzkServer("fixture").start() for _ in range(n - n_grpc)]
    grpc_servers: list = []
    if n_grpc:
        from tests.fleet.cuzk_grpc_server import CuzkGrpcServer

        grpc_servers = [CuzkGrpcServer("script").start() for _ in range(n_grpc)]
    print(json.dumps({"http": [s.port for s in servers], "grpc": [s.port for s in grpc_servers]}), flush=True)
    servers += grpc_servers
    try:
        threading.Event().wait()
    finally:
        for s in servers:
            s.stop()


def grpc_count(n: int, share: float) -> int:
    """How many of `n` sources are gRPC ones (a share of at least one source when the share is not 0)."""
    return 0 if share <= 0 else max(1, min(n, round(n * share)))


def add_sources(ports: dict[str, list[int]], interval: float) -> None:
    """Into the dashboard's database, through the command operators use (one rule set)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vastmanager.settings")
    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)
    with open(os.devnull, "w") as quiet:
        for i, port in enumerate(ports["http"]):
            call_command("addsource", f"box-{i:03d}", "--kind", "cuzk", "--url", f"http://127.0.0.1:{port}",
                         "--interval", str(interval), stdout=quiet)
        for i, port in enumerate(ports["grpc"]):
            call_command("addsource", f"grpc-{i:03d}", "--kind", "cuzk", "--grpc", f"127.0.0.1:{port}",
                         "--interval", str(interval), stdout=quiet)


# -- measuring ---------------------------------------------------------------------------------------
def _fleet(base: str) -> list[dict]:
    req = urllib.request.Request(f"{base}/api/fleet", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=10) as response:
        body = json.loads(response.read())
    return body["engines"] if isinstance(body, dict) else body


def wait_online(base: str, n: int, timeout: float = 120.0) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        online = sum(1 for e in _fleet(base) if (e.get("source") or {}).get("state") == "online")
        if online >= n:
            return time.monotonic() - started
        time.sleep(0.5)
    raise TimeoutError(f"only {online} of {n} sources online after {timeout}s")


def _probe_healthz(base: str, stop: threading.Event, out: list[float]) -> None:
    while not stop.wait(0.2):
        started = time.perf_counter()
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=10).read()
            out.append(time.perf_counter() - started)
        except OSError:
            out.append(float("inf"))


def _q(values: list[float], pct: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100)[pct - 1]


async def measure(base: str, port: int, pid: int, clients: int, seconds: float) -> dict:
    import psutil

    counting = [False]
    errors: list[str] = []
    html_bytes = [0] * clients
    html_frames = [0] * clients
    json_bytes, json_frames = [0], [0]
    polls: dict[tuple[str, int], float] = {}  # (engine, seq) -> poll_ms

    def html_client(i: int):
        def on_frame(text: str, now: float) -> None:
            html_bytes[i] += len(text.encode())
            html_frames[i] += 1
        return on_frame

    def on_json(text: str, now: float) -> None:
        json_bytes[0] += len(text.encode())
        json_frames[0] += 1
        frame = json.loads(text)
        src = (frame.get("snapshot") or {}).get("source") or {}
        # The last poll's round trip, once per published snapshot (about one publish per poll).
        if src.get("state") == "online" and isinstance(src.get("poll_ms"), (int, float)):
            polls[(frame["engine_id"], frame["seq"])] = src["poll_ms"]

    url = f"ws://127.0.0.1:{port}/ws/status/?token={TOKEN}"
    ready = [asyncio.Event() for _ in range(clients + 1)]
    tasks = [asyncio.create_task(wsb.client(url, html_client(i), counting, ready[i], errors)) for i in range(clients)]
    tasks.append(asyncio.create_task(wsb.client(url + "&format=json", on_json, counting, ready[-1], errors)))
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in ready)), 60)
    await asyncio.sleep(3.0)  # the connect-time burst of every engine's latest snapshot is not the steady state
    proc = psutil.Process(pid)
    stop = threading.Event()
    healthz: list[float] = []
    prober = threading.Thread(target=_probe_healthz, args=(base, stop, healthz), daemon=True)
    cpu0, t0 = sum(proc.cpu_times()[:2]), time.monotonic()
    counting[0] = True
    prober.start()
    await asyncio.sleep(seconds)
    counting[0] = False
    wall = time.monotonic() - t0
    cpu1 = sum(proc.cpu_times()[:2])
    stop.set()
    prober.join(5)
    rss = proc.memory_info().rss
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    poll_ms = sorted(polls.values())
    grpc_ms = sorted(ms for (engine, _), ms in polls.items() if engine.startswith("grpc-"))
    http_ms = sorted(ms for (engine, _), ms in polls.items() if not engine.startswith("grpc-"))
    return {
        "wall": wall, "cpu_pct": 100 * (cpu1 - cpu0) / wall, "rss_mib": rss / 2**20, "errors": len(errors),
        "polls": len(poll_ms), "poll_p50": _q(poll_ms, 50), "poll_p95": _q(poll_ms, 95),
        "http_p50": _q(http_ms, 50), "http_p95": _q(http_ms, 95), "grpc_p50": _q(grpc_ms, 50),
        "grpc_p95": _q(grpc_ms, 95),
        "frames_per_s": json_frames[0] / wall,
        "html_bytes_per_s": statistics.mean(html_bytes) / wall if clients else 0.0,
        "html_frames_per_s": statistics.mean(html_frames) / wall if clients else 0.0,
        "json_bytes_per_s": json_bytes[0] / wall,
        "healthz_p50": 1000 * _q(healthz, 50), "healthz_p95": 1000 * _q(healthz, 95),
        "healthz_max": 1000 * max(healthz) if healthz else float("nan"),
    }


def run(sources: int, interval: float, seconds: float, clients: int, grpc_share: float = 0.0) -> dict:
    with tempfile.TemporaryDirectory(prefix="vm-bench-fleet-") as data:
        env = dict(os.environ, VASTMANAGER_DATA_DIR=data, VASTMANAGER_TOKEN=TOKEN, LOG_LEVEL="WARNING",
                   PYTHONPATH=str(ROOT))
        for var in ("REDIS_URL", "DATABASE_URL", "VASTMANAGER_STATUS_TOKEN"):
            env.pop(var, None)
        fleet = subprocess.Popen([sys.executable, __file__, "--serve-fleet", str(sources), "--grpc", str(grpc_share)],
                                 cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
        dash = None
        try:
            ports = json.loads(fleet.stdout.readline())
            subprocess.run([sys.executable, __file__, "--add-sources", json.dumps(ports), "--interval", str(interval)],
                           cwd=ROOT, env=env, check=True, timeout=300)
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            watch = [sys.executable, str(ROOT / "manage.py"), "watchfleet", "--bind", f"127.0.0.1:{port}"]
            dash = subprocess.Popen(watch, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, start_new_session=True)
            wait_http(f"{base}/healthz", dash, timeout=120)
            settle = wait_online(base, sources)
            result = asyncio.run(measure(base, port, dash.pid, clients, seconds))
            result.update(sources=sources, interval=interval, clients=clients, settle_s=settle,
                          grpc=len(ports["grpc"]))
            return result
        finally:
            if dash is not None:
                stop_now(dash)
            stop_now(fleet)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sources", type=int, nargs="+", default=[100])
    ap.add_argument("--interval", type=float, default=1.5)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--clients", type=int, nargs="+", default=[0, 1, 10],
                    help="WebSocket clients in the page's format (HTML); one JSON client always runs too")
    ap.add_argument("--grpc", type=float, nargs="?", const=0.5, default=0.0, metavar="SHARE",
                    help="the share of sources that are cuzk gRPC daemons (0.5 when given alone)")
    ap.add_argument("--serve-fleet", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--add-sources", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_fleet:
        serve_fleet(args.serve_fleet, args.grpc)
        return
    if args.add_sources:
        add_sources(json.loads(args.add_sources), args.interval)
        return
    print(f"watchfleet, in-memory channel layer, window={args.seconds}s, interval={args.interval}s, "
          f"cores={os.cpu_count()}")
    print(f"{'sources':>7} {'grpc':>5} {'clients':>7} {'dash CPU':>9} {'RSS MiB':>8} {'polls':>6} {'poll p50':>9} "
          f"{'poll p95':>9} "
          f"{'snap/s':>7} {'html B/s/client':>16} {'html fr/s':>9} {'json B/s':>10} {'healthz p50/p95/max ms':>23} "
          f"{'errors':>6} {'http p50/p95 ms':>16} {'grpc p50/p95 ms':>16}")
    for n in args.sources:
        for c in args.clients:
            r = run(n, args.interval, args.seconds, c, args.grpc)
            print(f"{r['sources']:>7} {r['grpc']:>5} {r['clients']:>7} {r['cpu_pct']:>8.1f}% {r['rss_mib']:>8.0f} "
                  f"{r['polls']:>6} "
                  f"{r['poll_p50']:>7.1f}ms {r['poll_p95']:>7.1f}ms {r['frames_per_s']:>7.1f} "
                  f"{r['html_bytes_per_s']:>16,.0f} {r['html_frames_per_s']:>9.1f} {r['json_bytes_per_s']:>10,.0f} "
                  f"{r['healthz_p50']:>8.1f}/{r['healthz_p95']:.1f}/{r['healthz_max']:.1f} {r['errors']:>6} "
                  f"{r['http_p50']:>7.1f}/{r['http_p95']:<8.1f} {r['grpc_p50']:>7.1f}/{r['grpc_p95']:<8.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
