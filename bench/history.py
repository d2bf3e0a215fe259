"""History at scale: chart and timeline queries over 10^4..10^6 partition runs, the panel's render,
and a /metrics scrape.

    .venv/bin/python bench/history.py [--rows 10000 100000 1000000] [--database sqlite|postgres]
                                      [--explain-only] [--json]

Each size gets a fresh database (SQLite file in a temp dir, or a throwaway PostgreSQL database),
seeded with one bulk INSERT ... SELECT (a recursive CTE / generate_series): runs spread over 30
days on one engine, one job per 10 runs, plus a dense last 10 minutes (8 workers x 300 partitions)
for the render. Prints each query's median time and whether its plan uses the index; then the
activity region's render time (8 workers x 10 minutes) and a scrape with 1,000 live partitions.
Aims: every query <= 100 ms at 10^6 rows on SQLite; a scrape <= 50 ms. tests/history use
`--explain-only` to check the plans.

    .venv/bin/python bench/history.py --busy [--busy-rows 100000] [--day-rows 1000000] [--database ...]

measures what a busy engine's panel costs: BUSY_ROWS partition runs in the last hour (the panel's
activity region, refetched while the panel is open, and the 60-minute history page) and DAY_ROWS in
the last 24 hours (`?range=24h`): bytes and milliseconds of each response, built by its view.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

ENGINE = "bench-engine"
DAYS = 30
# The indexes the charts must use (SQLite names a unique constraint's index sqlite_autoindex_<table>_N).
INDEXES = ("partitionrun_engine_ended", "proofjob_engine_finished", "telemetryminute_unique", "telemetryminute_minute",
           "sqlite_autoindex_gpu_engine_telemetryminute", "historyrollup_unique",
           "sqlite_autoindex_gpu_engine_historyrollup", "historyrollup_period")


def seed(connection, rows: int, now: float, engine: str = ENGINE, span_secs: float = DAYS * 86400.0,
         first_job: int = 0, telemetry: bool = True) -> None:
    """Bulk-insert `rows` partition runs (and their jobs, ids from `first_job + 1`) spread over
    `span_secs` ending at `now`, for `engine`."""
    jobs = max(1, rows // 10)
    step = span_secs / rows
    pg = connection.vendor == "postgresql"
    if pg:
        ts, cte = "to_timestamp({})", ""
        series_j = f"SELECT generate_series(0, {jobs - 1}) AS i"
        series_r = f"SELECT generate_series(0, {rows - 1}) AS i"
    else:
        ts = "strftime('%Y-%m-%d %H:%M:%f', {}, 'unixepoch')"
        cte = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {}) SELECT i FROM n"
        series_j, series_r = cte.format(jobs - 1), cte.format(rows - 1)
    t_job = f"({now} - (i * 10 + 9) * {step})"
    kind = ("CASE i % 4 WHEN 0 THEN 'porep-c2' WHEN 1 THEN 'snap-update' WHEN 2 THEN 'window-post' "
            "ELSE 'winning-post' END")
    with connection.cursor() as c:
        c.execute(f"""INSERT INTO gpu_engine_proofjob (id, job_id, proof_kind, priority, status, total_partitions,
            submitted_at, claimed_at, started_at, finished_at, claimed_by, attempts, error, verified, timings)
            SELECT i + {first_job + 1}, '{engine}-job-' || i, {kind}, 0, 'done', 10, {ts.format(t_job + ' - 20')},
                   {ts.format(t_job + ' - 20')}, {ts.format(t_job + ' - 20 - i % 30')}, {ts.format(t_job)},
                   '{engine}', 1, '',
                   {'true' if pg else 1}, '{{}}' FROM ({series_j}) s""")
        t_end = f"({now} - i * {step})"
        c.execute(f"""INSERT INTO gpu_engine_partitionrun (job_id, "index", state, synth_ms, gpu_ms, finalize_ms,
            worker_id, gpu_ordinal, engine_id, error, recorded_at, proof_kind, synth_started_at, synth_ended_at,
            gpu_started_at, gpu_ended_at, finalize_started_at, finalize_ended_at, ended_at)
            SELECT i / 10 + {first_job + 1}, i % 10, CASE WHEN i % 97 = 0 THEN 'failed' ELSE 'done' END, 300, 500,
                   200, CAST(i % 8 AS TEXT), (i % 8) / 2, '{engine}', '', {ts.format(t_end)},
                   CASE (i / 10) % 4 WHEN 0 THEN 'porep-c2' WHEN 1 THEN 'snap-update' WHEN 2 THEN 'window-post'
                        ELSE 'winning-post' END,
                   {ts.format(t_end + ' - 1.0 - (i % 50) * 0.02')}, {ts.format(t_end + ' - 0.7')},
                   {ts.format(t_end + ' - 0.7')},
                   {ts.format(t_end + ' - 0.2')}, {ts.format(t_end + ' - 0.2')}, {ts.format(t_end)}, {ts.format(t_end)}
            FROM ({series_r}) s""")
        if not telemetry:
            c.execute("ANALYZE")
            return
        minutes = 7 * 1440  # a full retention of telemetry rollups: two GPUs and the engine row
        series_m = (f"SELECT generate_series(0, {minutes - 1}) AS i" if pg else cte.format(minutes - 1))
        t_min = f"({now - now % 60} - i * 60)"
        c.execute(f"""INSERT INTO gpu_engine_telemetryminute (engine_id, minute, gpu_ordinal, samples, util_pct,
            util_max_pct, mem_used_bytes, mem_total_bytes, queue_depth)
            SELECT '{ENGINE}', {ts.format(t_min)}, o.g, 60, 50 + i % 50, 100, 1000000000 + i, 80000000000,
                   CASE WHEN o.g = -1 THEN i % 20 END
            FROM ({series_m}) s CROSS JOIN (SELECT -1 AS g UNION ALL SELECT 0 UNION ALL SELECT 1) o""")
        if pg:
            c.execute("SELECT setval(pg_get_serial_sequence('gpu_engine_proofjob', 'id'), "
                      "(SELECT max(id) FROM gpu_engine_proofjob))")
            c.execute("ANALYZE")
        else:
            c.execute("ANALYZE")


def rollup(connection, now: float) -> None:
    """The rollup rows the engine's history writer would have written for the seeded runs and jobs,
    built in SQL (tests/history check that both agree), for every seeded run and job (as with a
    retention of DAYS). Once, after every seed: the backfill adds to what is there."""
    from datetime import datetime, timezone

    from gpu_engine import history_rollup

    history_rollup.backfill(datetime.fromtimestamp(now - DAYS * 86400 - 3600, timezone.utc))
    with connection.cursor() as c:
        c.execute("ANALYZE")


def seed_render(connection, now: float, workers: int = 8, per_worker: int = 300) -> str:
    """A dense last 10 minutes on its own engine: `workers` lanes, a partition every 2 s on each."""
    from datetime import datetime, timezone

    from gpu_engine.models import PartitionRun, ProofJob

    def at(t: float) -> datetime:
        return datetime.fromtimestamp(t, timezone.utc)

    engine = "bench-render"
    job = ProofJob.objects.create(job_id="bench-render-job", proof_kind="snap-update", status="done",
                                  claimed_by=engine)
    runs = []
    for w in range(workers):
        for k in range(per_worker):
            g0 = now - 600 + k * 2.0 + w * 0.1
            runs.append(PartitionRun(job=job, index=k % 16, state="done", synth_ms=300, gpu_ms=1500, finalize_ms=400,
                                     worker_id=str(w), gpu_ordinal=w // 2, engine_id=engine, proof_kind="snap-update",
                                     synth_started_at=at(g0 - 0.3), synth_ended_at=at(g0), gpu_started_at=at(g0),
                                     gpu_ended_at=at(g0 + 1.5), finalize_started_at=at(g0 + 1.5),
                                     finalize_ended_at=at(g0 + 1.9), ended_at=at(g0 + 1.9)))
    PartitionRun.objects.bulk_create(runs, batch_size=2000)
    return engine


def _explain(connection, sql: str) -> str:
    with connection.cursor() as c:
        if connection.vendor == "postgresql":
            c.execute("EXPLAIN " + sql)
        else:
            c.execute("EXPLAIN QUERY PLAN " + sql)
        return "\n".join(" ".join(str(x) for x in row) for row in c.fetchall())


def queries(now: float):
    from statuspanel.history import charts
    from statuspanel.history.timeline import build_timeline

    return {  # the timelines read exact rows or database buckets, whichever their window needs
        "timeline 10m": lambda: build_timeline(None, ENGINE, "10m", now),
        "timeline 60m": lambda: build_timeline(None, ENGINE, "60m", now),
        "throughput 1h": lambda: charts.throughput(ENGINE, now),
        "latency 1h": lambda: charts.latency(ENGINE, 3600, now),
        "latency 24h": lambda: charts.latency(ENGINE, 86400, now),
        "latency 7d": lambda: charts.latency(ENGINE, 7 * 86400, now),
        "throughput 24h": lambda: charts.throughput(ENGINE, now, 1440),
        "throughput 7d": lambda: charts.throughput(ENGINE, now, 7 * 1440),
        "telemetry 24h": lambda: charts.telemetry(ENGINE, 86400, now),
    }


# The day and week charts as they were before the rollup: read from the runs and jobs (--before).
BEFORE = ("latency 24h", "latency 7d", "throughput 24h", "throughput 7d")


def from_rows(fn):
    """`fn` with the charts reading the runs and jobs for every window (charts.USE_ROLLUP off)."""
    from statuspanel.history import charts

    def run():
        charts.USE_ROLLUP = False
        try:
            return fn()
        finally:
            charts.USE_ROLLUP = True

    return run


def measure(rows: int, explain_only: bool, repeat: int = 5, before: bool = False) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    now = time.time()
    t0 = time.perf_counter()
    seed(connection, rows, now)
    rollup(connection, now)
    out: dict = {"rows": rows, "database": connection.vendor, "seed_secs": round(time.perf_counter() - t0, 2),
                 "queries": {}}
    cases = queries(now)
    if before:
        cases.update({f"{name} (rows)": from_rows(cases[name]) for name in BEFORE})
    for name, fn in cases.items():
        with CaptureQueriesContext(connection) as ctx:
            fn()
        plans = [_explain(connection, q["sql"]) for q in ctx.captured_queries]
        entry = {"plans": plans, "uses_index": all(any(ix in p for ix in INDEXES) for p in plans)}
        if not explain_only:
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t) * 1000)
            entry["median_ms"] = round(statistics.median(times), 2)
        out["queries"][name] = entry
    if not explain_only:
        out.update(render_and_scrape(connection, now))
    return out


def render_and_scrape(connection, now: float) -> dict:
    from django.core.cache import cache
    from django.template.loader import render_to_string

    from gpu_engine import tallies, wire
    from statuspanel.history.views import activity_context
    from statuspanel.metrics import scrape

    engine = seed_render(connection, now)
    workers = [{"worker_id": w, "gpu_ordinal": w // 2, "state": "proving", "current_job": f"live-{w}",
                "current_partition": 0, "busy_secs": 0.5} for w in range(8)]
    snap = {"engine_id": engine, "seq": 1, "published_at": time.time(), "heartbeat_secs": 30.0, "gpu_workers": workers,
            "pipelines": [], "memory": {"total_bytes": 1 << 34, "used_bytes": 1 << 30}, "counters": {"queue_depth": 5}}
    times = []
    for _ in range(5):
        t = time.perf_counter()
        html = render_to_string("statuspanel/activity/_activity.html", {"a": activity_context(engine, snap)})
        times.append((time.perf_counter() - t) * 1000)
    bars = html.count('class="tl-bar')
    # A scrape with 1,000 live partitions (63 SnapDeals jobs of 16, minus 8) and a few tally rows.
    pipes = [{"job_id": f"live-{j}", "proof_kind": "snap-update", "partitions": [
        {"index": p, "state": ("gpu", "synthesizing", "finalizing", "done", "pending")[p % 5]} for p in range(16)]}
        for j in range(63)]
    pipes[-1]["partitions"] = pipes[-1]["partitions"][:8]
    live = dict(snap, pipelines=pipes)
    wire.store_snapshot(cache, live, 30.0)
    wire.register_engine(cache, engine, time.time())
    tallies.record_outcome(ENGINE, "porep-c2", "done", 100000)
    tallies.record_durations([(ENGINE, k, p, 1.0) for k in ("porep-c2", "snap-update", "window-post", "winning-post")
                              for p in tallies.DURATION_PHASES])
    scrapes = []
    for _ in range(20):
        t = time.perf_counter()
        body = scrape()
        scrapes.append((time.perf_counter() - t) * 1000)
    return {"render": {"workers": 8, "bars": bars, "median_ms": round(statistics.median(times), 2)},
            "scrape": {"live_partitions": sum(len(p["partitions"]) for p in pipes), "bytes": len(body),
                       "median_ms": round(statistics.median(scrapes), 2)}}


def busy(busy_rows: int, day_rows: int, before: bool = False) -> dict:
    """Bytes and ms of the activity region and the history pages of engines this busy."""
    from types import SimpleNamespace

    from django.core.cache import cache
    from django.db import connection
    from django.test import RequestFactory

    from statuspanel.history.views import activity_partial, history_page

    now = time.time()
    seed(connection, busy_rows, now, engine="bench-busy", span_secs=3600.0, telemetry=False)
    seed(connection, day_rows, now, engine="bench-day", span_secs=86400.0, first_job=busy_rows, telemetry=False)
    rollup(connection, now)
    factory = RequestFactory()
    user = SimpleNamespace(is_authenticated=True, is_active=True, is_staff=True, is_superuser=True,
                           get_username=lambda: "bench", has_perm=lambda *a: True)
    cases = {"activity region 10m": (activity_partial, "/panel/activity/bench-busy", "bench-busy", {}),
             "activity region 60m": (activity_partial, "/panel/activity/bench-busy", "bench-busy", {"window": "60m"}),
             "history page 1h": (history_page, "/history/bench-busy", "bench-busy", {}),
             "history page 24h": (history_page, "/history/bench-day", "bench-day", {"range": "24h"}),
             "history page 7d": (history_page, "/history/bench-day", "bench-day", {"range": "7d"})}
    if before:  # the same pages with the charts reading the runs (as before the rollup)
        cases.update({f"{name} (rows)": cases[name] for name in ("history page 24h", "history page 7d")})
    out: dict = {"database": connection.vendor, "busy_rows": busy_rows, "day_rows": day_rows, "pages": {}}
    for name, (view, path, engine, query) in cases.items():
        times, size = [], 0
        for _ in range(3):
            cache.clear()  # each time a build, not the region's one-second cache
            request = factory.get(path, query)
            request.user = user
            t = time.perf_counter()
            response = (from_rows(functools.partial(view, request, engine))() if name.endswith("(rows)")
                        else view(request, engine))
            times.append((time.perf_counter() - t) * 1000)
            assert response.status_code == 200, (name, response.status_code)
            size = len(response.content)
        out["pages"][name] = {"bytes": size, "median_ms": round(statistics.median(times), 1)}
    return out


def child(args: argparse.Namespace) -> None:
    """One size, in a process of its own whose DATABASE_URL is the fresh database."""
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if args.busy:
        print(json.dumps(busy(args.busy_rows, args.day_rows, args.before)))
        return
    print(json.dumps(measure(args.rows[0], args.explain_only, before=args.before)))


def run_one(rows: int, database: str, explain_only: bool, busy_sizes: tuple[int, int] | None = None,
            before: bool = False) -> dict:
    from tests.services import run_on_fresh_database

    argv = [sys.executable, __file__, "--child", "--rows", str(rows)] + (["--explain-only"] if explain_only else [])
    argv += ["--before"] if before else []
    if busy_sizes is not None:
        argv += ["--busy", "--busy-rows", str(busy_sizes[0]), "--day-rows", str(busy_sizes[1])]
    return run_on_fresh_database(argv, database)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--database", choices=["sqlite", "postgres"], nargs="+", default=["sqlite"])
    parser.add_argument("--explain-only", action="store_true", help="check the plans; skip the timings")
    parser.add_argument("--before", action="store_true",
                        help="also time the 24 h and 7 d charts read from the runs, as before the rollup")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--busy", action="store_true", help="measure a busy engine's activity region and pages")
    parser.add_argument("--busy-rows", type=int, default=100_000, help="runs in the last hour (--busy)")
    parser.add_argument("--day-rows", type=int, default=1_000_000, help="runs in the last 24 hours (--busy)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    if args.busy:
        busy_results = [run_one(0, db, False, (args.busy_rows, args.day_rows), args.before) for db in args.database]
        if args.json:
            print(json.dumps(busy_results[0] if len(busy_results) == 1 else busy_results))
            return
        for r in busy_results:
            print(f"{r['database']}: {r['busy_rows']:,} runs in the last hour, {r['day_rows']:,} in the last 24 h")
            for name, page in r["pages"].items():
                print(f"  {name:<26} {page['bytes']:>12,} bytes  {page['median_ms']:>9.1f} ms")
        return
    results = [run_one(n, db, args.explain_only, before=args.before) for db in args.database for n in args.rows]
    if args.json:
        print(json.dumps(results))
        return
    for r in results:
        print(f"{r['database']}: {r['rows']:>9,} partition runs (seeded in {r['seed_secs']} s)")
        for name, q in r["queries"].items():
            ms = f"{q['median_ms']:8.2f} ms" if "median_ms" in q else "       -"
            print(f"  {name:<21} {ms}  index: {'yes' if q['uses_index'] else 'NO'}")
        if "render" in r:
            print(f"  activity render, {r['render']['workers']} workers x 10 min ({r['render']['bars']} bars): "
                  f"{r['render']['median_ms']:.2f} ms")
            scrape = r["scrape"]
            print(f"  /metrics scrape, {scrape['live_partitions']} live partitions: {scrape['median_ms']:.2f} ms")

if __name__ == "__main__":
    main()
