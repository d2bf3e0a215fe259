"""The fleet collector alone: its CPU share and poll latency for N cuzk-like sources, no web server.

    .venv/bin/python bench/fleet_collector.py [--sources 10 100 300] [--interval 1.5] [--seconds 20]

The servers (tests/fleet/cuzk_server.py, the fixture with a moving clock) run in a helper process
(bench/fleet.py --serve-fleet), so their CPU is not counted. The collector runs in this process with
the in-memory channel layer and the local-memory cache (no database: plain source configs). Over
the window it prints the CPU share of one core this process used (the collector's loop thread and
its thread pool are all that runs), polls per second, and each source's latest poll duration
(p50/p95/max: request, JSON decode and adapter, as `source.poll_ms` reports it).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vastmanager.settings")


def run(n: int, interval: float, seconds: float) -> dict:
    from statuspanel.fleet.collector import FleetCollector
    from statuspanel.fleet.transport import SourceConfig

    helper = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fleet.py"), "--serve-fleet", str(n)],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        ports = json.loads(helper.stdout.readline())["http"]  # the stand-ins: {"http": [...], "grpc": [...]}
        configs = [SourceConfig(id=i, name=f"bench-{i:03d}", kind="cuzk", transport="http",
                                url=f"http://127.0.0.1:{port}", interval_secs=interval) for i, port in enumerate(ports)]
        collector = FleetCollector(load_sources=lambda: configs, record_state_change=lambda *a: None).start()
        try:
            deadline = time.monotonic() + 60
            while sum(s.polls > 0 for s in collector.states.values()) < n and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(interval)  # every source past its first poll
            polls0, cpu0, wall0 = sum(s.polls for s in collector.states.values()), time.process_time(), time.monotonic()
            latencies: list[float] = []
            while time.monotonic() - wall0 < seconds:
                time.sleep(interval)
                latencies += [s.poll_ms for s in collector.states.values() if s.poll_ms is not None]
            cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
            polls = sum(s.polls for s in collector.states.values()) - polls0
            failing = sum(s.failure is not None for s in collector.states.values())
        finally:
            collector.stop()
    finally:
        helper.kill()
        helper.wait(10)
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [float("nan")] * 99
    return {"sources": n, "cpu_pct": 100 * cpu / wall, "polls_per_s": polls / wall, "p50": q[49], "p95": q[94],
            "max": max(latencies, default=float("nan")), "failing": failing}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sources", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--interval", type=float, default=1.5)
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    import django

    django.setup()
    print(f"fleet collector alone, interval={args.interval}s, window={args.seconds}s, cores={os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'sources':>7} {'CPU of one core':>16} {'polls/s':>8} {'poll p50':>9} {'poll p95':>9} {'max':>8} "
          f"{'failing':>7}")
    for n in args.sources:
        r = run(n, args.interval, args.seconds)
        print(f"{r['sources']:>7} {r['cpu_pct']:>15.1f}% {r['polls_per_s']:>8.1f} {r['p50']:>7.1f}ms "
              f"{r['p95']:>7.1f}ms {r['max']:>6.1f}ms {r['failing']:>7}", flush=True)


if __name__ == "__main__":
    main()
