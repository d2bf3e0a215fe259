"""Fleet history's cost: the collector folding polls into minutes, the writer keeping them, the readers.

    .venv/bin/python bench/fleet_history.py [--sources 100] [--workers 8] [--minutes 10]
                                            [--database sqlite postgres] [--json]

For N sources of W GPU workers each (the fixture's cuzk document, its counters advancing), it feeds
`FleetHistory.observe()` one poll per source every 1.5 s of a simulated clock over M minutes, and
measures: the CPU time of one observe() (it runs on the collector's loop), the writer's batch of
one minute for every source (rows, milliseconds: one bulk insert plus the outcome and duration
tallies), what one minute of writing costs as a share of one core, the /history page's timeline
and cost report for one source over the last hour, and the rows one day keeps. Each database is
a fresh one (an SQLite file in a temp dir, or a throwaway PostgreSQL database).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

POLL_SECS = 1.5


def _document(workers: int, n: int) -> dict:
    """Poll n of a busy box: worker w proves on polls where (n + w) is odd; counters advance."""
    return {
        "uptime_secs": 10.0 * n,
        "gpu_workers": [{"worker_id": w, "gpu_ordinal": w // 2, "state": "proving" if (n + w) % 2 else "idle"}
                        for w in range(workers)],
        "pipelines": [{"job_id": f"j{n // 8}", "proof_kind": "snap-update",
                       "partitions": [{"index": i, "state": "done" if i < n % 8 else "gpu", "synth_ms": 1000,
                                       "gpu_ms": 400} for i in range(8)]}],
        "counters": {"total_completed": n, "completed_by_kind": {"snap-update": n}, "failed_by_kind": {}},
    }


def measure(sources: int, workers: int, minutes: int) -> dict:
    from django.db import connection

    from statuspanel.fleet import cost
    from statuspanel.fleet.history import FleetHistory, write_minutes
    from statuspanel.history.fleet import build_fleet_timeline
    from statuspanel.models import FleetMinute, Source

    Source.objects.bulk_create([Source(name=f"box-{i}", kind="cuzk", url=f"http://10.0.{i // 250}.{i % 250}:9821",
                                       price_per_hour=2) for i in range(sources)])
    now = time.time()
    t0 = now - now % 60 - (minutes + 1) * 60
    clock = [t0]
    batches: list[tuple[int, float]] = []

    def timed_write(batch) -> None:
        started = time.perf_counter()
        write_minutes(batch)
        batches.append((len(batch), (time.perf_counter() - started) * 1000))

    history = FleetHistory(timed_write, clock=lambda: clock[0])
    observe_secs: list[float] = []
    docs = [_document(workers, n) for n in range(16)]
    polls = int(minutes * 60 / POLL_SECS)
    for n in range(1, polls + 1):
        clock[0] = t0 + n * POLL_SECS
        for i in range(sources):
            doc = docs[n % 16] | {"counters": _document(workers, n)["counters"]}
            started = time.process_time()
            history.observe(f"box-{i}", doc, POLL_SECS)
            observe_secs.append(time.process_time() - started)
        if history.pending:
            history.flush()
    history.flush(closing=True)
    rows = FleetMinute.objects.count()
    full = [ms for n, ms in batches if n == sources]
    started = time.perf_counter()
    build_fleet_timeline("box-0", "60m")
    timeline_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    cost.build_report([], now=clock[0])
    report_ms = (time.perf_counter() - started) * 1000
    per_minute_ms = statistics.median(full) if full else None
    return {"database": connection.vendor, "sources": sources, "workers": workers, "minutes": minutes,
            "observe_us_p50": round(1e6 * statistics.median(observe_secs), 1),
            "observe_us_p95": round(1e6 * sorted(observe_secs)[int(0.95 * len(observe_secs))], 1),
            "rows_per_minute": rows // max(1, len(batches)) if batches else 0, "rows": rows,
            "batch_ms_p50": round(per_minute_ms, 2) if per_minute_ms is not None else None,
            "batch_ms_max": round(max(ms for _, ms in batches), 2) if batches else None,
            "write_core_share": round(per_minute_ms / 60_000, 5) if per_minute_ms is not None else None,
            "rows_per_day": (rows // max(1, len(batches))) * 1440 if batches else 0,
            "timeline_60m_ms": round(timeline_ms, 2), "cost_report_ms": round(report_ms, 2)}


def child(args: argparse.Namespace) -> None:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    print(json.dumps(measure(args.sources, args.workers, args.minutes)))


def run_one(database: str, sources: int, workers: int, minutes: int) -> dict:
    from tests.services import run_on_fresh_database

    return run_on_fresh_database([sys.executable, __file__, "--child", "--sources", str(sources), "--workers",
                                  str(workers), "--minutes", str(minutes)], database)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", type=int, default=100)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--database", nargs="+", choices=["sqlite", "postgres"], default=["sqlite", "postgres"])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    results = [run_one(db, args.sources, args.workers, args.minutes) for db in args.database]
    if args.json:
        print(json.dumps(results))
        return
    for r in results:
        print(f"{r['database']}: {r['sources']} sources x {r['workers']} workers, {r['minutes']} min at {POLL_SECS} s")
        print(f"  observe() per poll: p50 {r['observe_us_p50']} us, p95 {r['observe_us_p95']} us (collector loop)")
        print(f"  one minute of every source: {r['rows_per_minute']} rows in {r['batch_ms_p50']} ms (p50), "
              f"max {r['batch_ms_max']} ms = {100 * (r['write_core_share'] or 0):.3f} % of one core")
        print(f"  rows per day: {r['rows_per_day']:,}; timeline 60 min of one source: {r['timeline_60m_ms']} ms; "
              f"cost report (all sources, 3 windows): {r['cost_report_ms']} ms")


if __name__ == "__main__":
    main()
