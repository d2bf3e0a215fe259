"""The alert evaluator's cost and its notification latency.

    .venv/bin/python bench/alerts.py [--sources 100] [--engines 10] [--seconds 30] [--trials 20] [--for 5]

1. Evaluation cost: every `ALERTS_EVAL_SECS` (1 s) the evaluator of this process evaluates 100 fleet
   source snapshots (the cuzk fixture through the real adapter; a tenth of them down, all with
   partitions in flight) and 10 local engines, with a database holding queued jobs and a day of
   partition history (a throwaway SQLite file, migrated here). Printed: the CPU share of one core
   the evaluation thread used over the window, and one evaluation's p50/max in ms.
2. Latency: a source goes down at t0; the time until the loopback webhook receiver
   (tests/alerts/receivers.py) holds the notification, over `--trials` trials, with the real
   evaluator and dispatcher threads and the default group wait (2 s). The group interval is set
   to 0 so that each trial is the first of its group (what an operator waits for when a box drops);
   each trial starts at a random phase of the evaluation cycle (a condition is seen up to one
   evaluation interval after it becomes true).
   Printed: p50/p95/max and the aim (`for` + group wait).
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vastmanager.settings")


def setup(data_dir: str) -> None:
    os.environ["VASTMANAGER_DATA_DIR"] = data_dir
    os.environ["DATABASE_URL"] = f"sqlite:///{data_dir}/bench.sqlite3"
    os.environ.pop("REDIS_URL", None)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", "--noinput", "-v0")


def fill_database(jobs: int, runs: int) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from gpu_engine.models import PartitionRun, ProofJob

    now = timezone.now()
    made = ProofJob.objects.bulk_create([ProofJob(job_id=f"bench-{i}", proof_kind="snap-update", status="queued")
                                         for i in range(jobs)])
    done = ProofJob.objects.create(job_id="bench-done", proof_kind="snap-update", status="done")
    PartitionRun.objects.bulk_create([
        PartitionRun(job=done, index=i % 16, state="done", proof_kind="snap-update", synth_ms=9000 + i % 700,
                     gpu_ms=4000 + i % 300, engine_id=f"local-{i % 10}", ended_at=now - timedelta(seconds=i * 8))
        for i in range(runs)])
    assert made


def snapshots(sources: int, engines: int, down_every: int = 10) -> list[dict]:
    import json

    from statuspanel.fleet.cuzk import adapt_cuzk
    from tests.fleet.cuzk_server import load_fixture

    base = adapt_cuzk(json.loads(json.dumps(load_fixture())))
    out = []
    for i in range(sources):
        down = i % down_every == 0
        source = {"kind": "cuzk", "transport": "http", "state": "unreachable" if down else "online",
                  "error": "refused: connection refused" if down else None, "reason": "refused" if down else None}
        out.append(dict(base, engine_id=f"fleet-{i:03d}", seq=1, source=source))
    for i in range(engines):
        out.append(dict(base, engine_id=f"local-{i}", seq=1))
    return out


def cost(sources: int, engines: int, seconds: float) -> dict:
    from django.conf import settings

    from statuspanel.alerts.evaluator import Evaluator

    snaps = snapshots(sources, engines)
    seq = [1]

    def feed() -> list[dict]:
        seq[0] += 1
        return [dict(s, seq=seq[0]) for s in snaps]

    evaluator = Evaluator(snapshots=feed)
    assert evaluator.lease.acquire_or_renew()
    evaluator.evaluate_once()  # the first one creates the alerts; the steady state is measured
    timings: list[float] = []
    cpu = 0.0
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        c0, w0 = time.thread_time(), time.perf_counter()
        evaluator.lease.acquire_or_renew()
        evaluator.evaluate_once()
        cpu += time.thread_time() - c0
        timings.append((time.perf_counter() - w0) * 1000)
        time.sleep(max(0.0, settings.ALERTS_EVAL_SECS - (time.perf_counter() - w0)))
    wall = time.monotonic() - start
    return {"cpu_pct": 100 * cpu / wall, "eval_p50_ms": statistics.median(timings), "eval_max_ms": max(timings),
            "evaluations": len(timings)}


def latency(trials: int, for_secs: float) -> list[float]:
    from django.conf import settings
    from django.core.management import call_command

    from statuspanel.alerts.delivery import Dispatcher
    from statuspanel.alerts.evaluator import Evaluator
    from tests.alerts.receivers import WebhookReceiver

    settings.ALERTS_GROUP_INTERVAL_SECS = 0.0
    call_command("setalertrule", "source-down", "--for", str(for_secs), stdout=open(os.devnull, "w"))
    state = {"down": False, "seq": 0}
    lock = threading.Lock()

    def feed() -> list[dict]:
        with lock:
            state["seq"] += 1
            src = {"kind": "cuzk", "transport": "http", "state": "unreachable" if state["down"] else "online",
                   "error": "refused", "reason": "refused"}
            return [{"engine_id": "lat-box", "seq": state["seq"], "source": src}]

    results = []
    with WebhookReceiver() as hook:
        call_command("addnotifier", "bench-hook", "--kind", "webhook", "--url", hook.url, stdout=open(os.devnull, "w"))
        evaluator = Evaluator(snapshots=feed, dispatcher=Dispatcher()).start()
        try:
            time.sleep(settings.ALERTS_EVAL_SECS * 2)
            rng = random.Random(7)
            for _ in range(trials):
                time.sleep(rng.uniform(0, settings.ALERTS_EVAL_SECS))  # a random phase of the evaluation cycle
                seen = len(hook.posts)
                with lock:
                    state["down"] = True
                t0 = time.monotonic()
                while len(hook.posts) == seen:
                    time.sleep(0.01)
                results.append(hook.posts[seen][2] - t0)
                with lock:
                    state["down"] = False
                while len(hook.posts) == seen + 1:  # the resolution, before the next trial
                    time.sleep(0.01)
        finally:
            evaluator.stop()
            call_command("removenotifier", "bench-hook", stdout=open(os.devnull, "w"))
    return results


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=100)
    parser.add_argument("--engines", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--for", dest="for_secs", type=float, default=5.0)
    parser.add_argument("--eval-secs", type=float, default=None, help="ALERTS_EVAL_SECS (default: the setting)")
    parser.add_argument("--group-wait", type=float, default=None, help="ALERTS_GROUP_WAIT_SECS (default 2)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-alerts-") as data_dir:
        setup(data_dir)
        from django.conf import settings

        if args.eval_secs is not None:
            settings.ALERTS_EVAL_SECS = args.eval_secs
        if args.group_wait is not None:
            settings.ALERTS_GROUP_WAIT_SECS = args.group_wait
        fill_database(jobs=50, runs=min(10_000, 100 * max(args.sources, 1)))
        c = cost(args.sources, args.engines, args.seconds)
        print(f"evaluation: {args.sources} fleet sources + {args.engines} local engines every "
              f"{settings.ALERTS_EVAL_SECS:g} s: {c['cpu_pct']:.2f} % of one core "
              f"(one evaluation p50 {c['eval_p50_ms']:.1f} ms, max {c['eval_max_ms']:.1f} ms, "
              f"{c['evaluations']} evaluations)")
        lat = latency(args.trials, args.for_secs)
        q = statistics.quantiles(lat, n=20, method="inclusive") if len(lat) > 1 else [lat[0]] * 19
        aim = args.for_secs + settings.ALERTS_GROUP_WAIT_SECS
        print(f"condition -> webhook over {len(lat)} trials (for {args.for_secs:g} s, group wait "
              f"{settings.ALERTS_GROUP_WAIT_SECS:g} s, evaluation every {settings.ALERTS_EVAL_SECS:g} s): "
              f"p50 {statistics.median(lat):.2f} s, p95 {q[18]:.2f} s, max {max(lat):.2f} s "
              f"(aim: for + group wait = {aim:.1f} s)")
        return {**c, "latency": lat}


if __name__ == "__main__":
    main()
