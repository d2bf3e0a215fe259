"""Web latency while proving, with the proving process pool on and off, side by side in one run.

    .venv/bin/python bench/web_latency.py [--clients 100] [--seconds 15] [--repeat 2] [--on N]

Each round starts `runprover --demo --backend cpu` twice, once with `--proving-processes 0` (the
MSMs and NTTs run in the engine's threads, in the web process) and once with the pool (`--on`, the
default size when omitted), connects N WebSocket clients and, at the same time, probes
`GET /healthz` every 100 ms. It prints, per mode, the WebSocket delivery latency (receive time
minus the snapshot's `published_at`), the share of the published snapshots that arrived (the
count published read off the frames' consecutive seqs), the HTTP round-trip times, and the
server's CPU (its own and its children's).
The two modes alternate within each round so drifts of the machine hit both alike.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_websocket", ROOT / "bench" / "websocket.py")
wsb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wsb)


def _seq(text: str) -> int | None:
    # Frames are {"type", "engine_id", "seq", ...}: the first "seq" is the frame's own.
    i = text.find('"seq":')
    if i < 0:
        return None
    j = k = i + len('"seq":')
    while k < len(text) and (text[k].isdigit() or text[k] == " "):
        k += 1
    return int(text[j:k])


def _record_latency_and_seq(got: list[tuple[float, int]]) -> Callable[[str, float], None]:
    def on_frame(text: str, now: float) -> None:
        published, seq = wsb._published_at(text), _seq(text)
        if published is not None and seq is not None:
            got.append((now - published, seq))

    return on_frame


async def run_clients(port: int, n: int, seconds: float, server_pid: int) -> dict:
    """Latency of every frame, and delivered = frames received / (clients x snapshots published
    in the window), the published count read off the frames' consecutive seqs."""
    import psutil

    url = f"ws://127.0.0.1:{port}/ws/status/?token={wsb.TOKEN}&format=html"
    per_client: list[list[tuple[float, int]]] = [[] for _ in range(n)]
    counting, errors, tasks = [False], [], []
    for start in range(0, n, 50):  # connect in batches so the handshakes do not time out
        batch = [asyncio.Event() for _ in range(start, min(n, start + 50))]
        for i, ev in enumerate(batch, start):
            record = _record_latency_and_seq(per_client[i])
            tasks.append(asyncio.create_task(wsb.client(url, record, counting, ev, errors)))
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in batch)), 120)
    await asyncio.sleep(2.0)  # warm-up
    server = psutil.Process(server_pid)
    s0, tree0, t0 = sum(server.cpu_times()[:2]), wsb._tree_cpu(server), time.monotonic()
    counting[0] = True
    await asyncio.sleep(seconds)
    counting[0] = False
    wall = time.monotonic() - t0
    s1, tree1 = sum(server.cpu_times()[:2]), wsb._tree_cpu(server)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    lat = sorted(x for got in per_client for x, _ in got)
    seqs = [s for got in per_client for _, s in got]
    published = (max(seqs) - min(seqs) + 1) if seqs else 0
    p50, p95 = _quantiles_ms(lat)
    return {
        "clients": n, "frames": len(lat), "published": published, "published_per_s": published / wall,
        "errors": len(errors),
        "delivered": len(lat) / max(n * published, 1),
        "p50_ms": p50, "p95_ms": p95, "p99_ms": 1000 * lat[int(0.99 * (len(lat) - 1))] if lat else float("nan"),
        "max_ms": 1000 * lat[-1] if lat else float("nan"),
        "server_cpu_pct": 100 * (s1 - s0) / wall, "server_cpu_children_pct": 100 * (tree1 - tree0) / wall,
    }


def _probe_http(port: int, stop: threading.Event, out: list[float], errors: list[str]) -> None:
    url = f"http://127.0.0.1:{port}/healthz"
    while not stop.is_set():
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                r.read()
            out.append(time.perf_counter() - t0)
        except OSError as exc:
            errors.append(type(exc).__name__)
        stop.wait(0.1)


def _quantiles_ms(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return float("nan"), float("nan")
    q = statistics.quantiles(sorted(values), n=100)
    return 1000 * q[49], 1000 * q[94]


def run_mode(processes: int | None, clients: int, seconds: float) -> dict:
    port = wsb.free_port()
    with tempfile.TemporaryDirectory(prefix="vm-weblat-") as data:
        env = dict(os.environ, VASTMANAGER_DATA_DIR=data, VASTMANAGER_TOKEN=wsb.TOKEN, LOG_LEVEL="WARNING",
                   PYTHONPATH=str(ROOT), VASTMANAGER_PARAMS_DIR=str(ROOT / "data" / "params"))
        for var in ("REDIS_URL", "DATABASE_URL"):
            env.pop(var, None)
        manage = [sys.executable, str(ROOT / "manage.py")]
        subprocess.run(manage + ["migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
        cmd = manage + ["runprover", "--demo", "--backend", "cpu", "--bind", f"127.0.0.1:{port}"]
        if processes is not None:
            cmd += ["--proving-processes", str(processes)]
        log_path = Path(data) / "runprover.log"  # the teardown's signals make noise; shown only on failure
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=open(log_path, "w"),
                                start_new_session=True)
        http: list[float] = []
        http_errors: list[str] = []
        stop = threading.Event()
        try:
            wsb.wait_http(f"http://127.0.0.1:{port}/healthz", proc)
            prober = threading.Thread(target=_probe_http, args=(port, stop, http, http_errors), daemon=True)
            prober.start()
            result = asyncio.run(run_clients(port, clients, seconds, proc.pid))
            stop.set()
            prober.join()
        except BaseException:
            sys.stderr.write(log_path.read_text()[-4000:])
            raise
        finally:
            stop.set()
            wsb.stop_now(proc)
    result["http_p50_ms"], result["http_p95_ms"] = _quantiles_ms(http)
    result["http_max_ms"] = 1000 * max(http) if http else float("nan")
    result["http_errors"] = len(http_errors)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--repeat", type=int, default=1, help="rounds of (off, on)")
    ap.add_argument("--on", type=int, default=None, metavar="N",
                    help="proving processes in the 'pool' mode (default: runprover's default size)")
    args = ap.parse_args()
    modes = [("in-thread", 0), ("pool", args.on)]
    print(f"runprover --demo --backend cpu; {args.clients} clients; window {args.seconds}s; "
          f"cores={os.cpu_count()}")
    head = (f"{'mode':>9} {'ws p50':>7} {'ws p95':>7} {'ws p99':>7} {'ws max':>7} {'pub/s':>6} {'delivered':>9} "
            f"{'http p50':>8} {'http p95':>8} {'http max':>8} {'srv CPU':>7} {'children':>8} {'errors':>6}")
    print(head)
    rows: dict[str, list[dict]] = {name: [] for name, _ in modes}
    for _ in range(args.repeat):
        for name, processes in modes:
            r = run_mode(processes, args.clients, args.seconds)
            rows[name].append(r)
            print(f"{name:>9} {r['p50_ms']:>7.1f} {r['p95_ms']:>7.1f} {r['p99_ms']:>7.1f} {r['max_ms']:>7.1f} "
                  f"{r['published_per_s']:>6.1f} {100 * r['delivered']:>8.1f}% "
                  f"{r['http_p50_ms']:>8.1f} {r['http_p95_ms']:>8.1f} "
                  f"{r['http_max_ms']:>8.1f} {r['server_cpu_pct']:>6.0f}% {r['server_cpu_children_pct']:>7.0f}% "
                  f"{r['errors'] + r['http_errors']:>6}", flush=True)
    if args.repeat > 1:
        print("means over the rounds:")
        for name, rs in rows.items():
            m = {k: statistics.mean(r[k] for r in rs) for k in ("p50_ms", "p95_ms", "delivered", "http_p50_ms",
                                                                  "http_p95_ms", "published_per_s")}
            print(f"{name:>9} ws p50 {m['p50_ms']:.1f} ms, p95 {m['p95_ms']:.1f} ms, {m['published_per_s']:.1f} "
                  f"snapshots/s published, {100 * m['delivered']:.1f}% delivered; "
                  f"http p50 {m['http_p50_ms']:.1f} ms, p95 {m['http_p95_ms']:.1f} ms")


if __name__ == "__main__":
    main()
