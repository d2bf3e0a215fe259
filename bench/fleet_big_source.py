"""A huge fleet source beside a healthy one: does the healthy one keep streaming?

    .venv/bin/python bench/fleet_big_source.py [--workers 50000] [--seconds 20] [--interval 1.5]

One dashboard (`manage.py watchfleet`, a process of its own) polls two cuzk-like servers on
loopback: the fixture (healthy) and a valid document of `--workers` workers (50,000 is about 6 MB,
under the 8 MiB byte cap; over FLEET_MAX_WORKERS it is refused at the door as malformed /
too-large). Over the window it prints the WebSocket frames per second of each engine (one JSON
client), the dashboard's CPU and RSS, and the size and time of `GET /` (logged in) and `/metrics`.
"""
from __future__ import annotations

import argparse
import asyncio
import http.cookiejar
import importlib.util
import json
import re
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
_spec = importlib.util.spec_from_file_location("bench_websocket", ROOT / "bench" / "websocket.py")
wsb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wsb)

from tests.fleet.big_source import StaticServer, many_workers
from tests.fleet.cuzk_server import CuzkServer
from tests.fleet.dashboard import Dashboard, manage

TOKEN = "bench-big-source-token-0123"
USER, PASSWORD = "bench", "bench-password-0123456"


def _logged_in(base: str) -> urllib.request.OpenerDirector:
    """An opener holding a session of the panel (the page needs one), logged in through the admin."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    form = opener.open(f"{base}/admin/login/", timeout=30).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
    data = urllib.parse.urlencode({"username": USER, "password": PASSWORD, "csrfmiddlewaretoken": csrf,
                                   "next": "/"}).encode()
    opener.open(urllib.request.Request(f"{base}/admin/login/", data=data, headers={"Referer": f"{base}/admin/login/"}),
                timeout=30).read()
    return opener


def _timed(opener, request) -> tuple[float, int, int]:
    started = time.perf_counter()
    with opener.open(request, timeout=120) as response:
        body = response.read()
        return time.perf_counter() - started, len(body), response.status


async def _frames(port: int, seconds: float) -> tuple[Counter, float, list[str]]:
    counts: Counter = Counter()
    counting, errors, ready = [False], [], asyncio.Event()

    def on_frame(text: str, now: float) -> None:
        counts[json.loads(text).get("engine_id")] += 1

    url = f"ws://127.0.0.1:{port}/ws/status/?token={TOKEN}&format=json"
    task = asyncio.create_task(wsb.client(url, on_frame, counting, ready, errors))
    await asyncio.wait_for(ready.wait(), 60)
    await asyncio.sleep(2.0)  # past the connect-time burst
    counting[0] = True
    started = time.monotonic()
    await asyncio.sleep(seconds)
    counting[0] = False
    wall = time.monotonic() - started
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return counts, wall, errors


def run(workers: int, seconds: float, interval: float) -> dict:
    import psutil

    with tempfile.TemporaryDirectory(prefix="vm-bench-big-") as tmp, \
            CuzkServer("fixture") as healthy, StaticServer(many_workers(workers)) as big, \
            Dashboard(Path(tmp), TOKEN) as dash:
        manage(dash.env, "shell", "-c", "from django.contrib.auth import get_user_model; "
               f"get_user_model().objects.create_superuser('{USER}', 'b@example.net', '{PASSWORD}')")
        dash.add_sources([["healthy", "--kind", "cuzk", "--url", healthy.url, "--interval", str(interval)],
                          ["huge", "--kind", "cuzk", "--url", big.url, "--interval", str(interval)]])
        dash.start()
        dash.wait_state("healthy", "online", 60)
        huge = dash.wait_for("huge", lambda s: (s.get("source") or {}).get("state") in ("malformed", "online"), 120,
                             "the big source answered")
        proc = psutil.Process(dash.proc.pid)
        cpu0 = sum(proc.cpu_times()[:2])
        counts, wall, errors = asyncio.run(_frames(dash.port, seconds))
        cpu = 100 * (sum(proc.cpu_times()[:2]) - cpu0) / wall
        page = _timed(_logged_in(dash.base), f"{dash.base}/")
        metrics = _timed(urllib.request.build_opener(), urllib.request.Request(
            f"{dash.base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}))
        return {"workers": workers, "document_bytes": len(big.encoded), "huge_state": huge["source"]["state"],
                "huge_error": huge["source"]["error"], "healthy_fps": counts["healthy"] / wall,
                "huge_fps": counts["huge"] / wall, "cpu_pct": cpu, "rss_mib": proc.memory_info().rss / 2**20,
                "page_s": page[0], "page_bytes": page[1], "metrics_s": metrics[0], "metrics_bytes": metrics[1],
                "errors": errors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=50_000)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--interval", type=float, default=1.5)
    args = ap.parse_args()
    r = run(args.workers, args.seconds, args.interval)
    print(f"big source: {r['workers']} workers, {r['document_bytes']:,} bytes -> {r['huge_state']} "
          f"({r['huge_error']})")
    print(f"frames/s: healthy {r['healthy_fps']:.2f}, big {r['huge_fps']:.2f} (interval {args.interval} s: "
          f"a heartbeat or a poll each); dashboard CPU {r['cpu_pct']:.1f}% of a core, RSS {r['rss_mib']:.0f} MiB")
    print(f"GET / {r['page_s'] * 1000:.0f} ms, {r['page_bytes']:,} bytes; /metrics {r['metrics_s'] * 1000:.0f} ms, "
          f"{r['metrics_bytes']:,} bytes; WebSocket errors: {r['errors'] or 'none'}")


if __name__ == "__main__":
    main()
