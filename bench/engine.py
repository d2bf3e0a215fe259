"""The whole engine on one machine: proofs per minute by kind, mean phase times, worker busy share.

Usage: .venv/bin/python bench/engine.py [--mix porep-c2=4,snap-update=4,window-post=8,winning-post=8]
                                        [--backend cpu] [--workers 2] [--synth-workers 1] [--finalizers 1]
                                        [--scale 1] [--out PATH]
Runs `Engine` in this process against a fresh SQLite database in a temporary directory
(parameters are generated or read from --params-dir before the clock starts), submits the
whole mix at once and waits for it. "busy" is the share of wall time each worker spent in the
device part of a partition, measured while the database queue still held jobs (the window in
which synthesis alone decides whether the workers are fed; aim >= 90%) and over the whole run.
Writes the table as Markdown to --out (default bench/results/engine.md).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def parse_mix(text: str) -> dict[str, int]:
    from gpu_engine.kinds import get_kind

    mix: dict[str, int] = {}
    for item in text.split(","):
        kind, _, count = item.partition("=")
        mix[get_kind(kind.strip()).name] = int(count)
    if not mix or any(n < 0 for n in mix.values()):
        raise SystemExit(f"bad --mix {text!r}")
    return mix


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mix", default="porep-c2=4,snap-update=4,window-post=8,winning-post=8")
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--workers", type=int, default=2, help="workers per device")
    ap.add_argument("--synth-workers", type=int, default=1)
    ap.add_argument("--finalizers", type=int, default=1)
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--proving-processes", type=int, default=None,
                    help="proving pool size (default: the engine's; 0 = prove in the engine's threads)")
    ap.add_argument("--params-dir", default=None, help="reuse a parameter cache (default: a fresh temporary one)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "engine.md"))
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="vastmanager-bench-"))
    os.environ["VASTMANAGER_DATA_DIR"] = str(tmp)
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vastmanager.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from gpu_engine import queue
    from gpu_engine.engine import Engine, EngineConfig
    from gpu_engine.models import ProofJob

    call_command("migrate", verbosity=0)
    mix = parse_mix(args.mix)
    config = EngineConfig(engine_id="bench", backend=args.backend, gpus=[0], workers_per_device=args.workers,
                          synth_workers=args.synth_workers, finalizers=args.finalizers, scale=args.scale,
                          params_dir=Path(args.params_dir) if args.params_dir else tmp / "params",
                          lease_secs=60, heartbeat_secs=1.0, poll_secs=0.02,
                          proving_processes=args.proving_processes)
    engine = Engine(config)
    t = time.monotonic()
    engine.prepare()
    print(f"params ready in {time.monotonic() - t:.1f}s; mix {mix}; {len(engine.workers)} worker(s), "
          f"{args.synth_workers} synthesis process(es), {args.finalizers} finalizer(s), backend {args.backend}, "
          f"{engine.proving_processes} proving process(es)")

    order = [k for k, n in mix.items() for _ in range(n)]
    for i, kind in enumerate(order):
        queue.submit_job(kind, f"bench-{kind}-{i}")
    total = len(order)
    queue_empty_at: list[float] = []
    stop = threading.Event()

    def watch_queue() -> None:
        from django.db import connection

        while not stop.is_set():
            if queue.queue_depth() == 0:
                queue_empty_at.append(time.monotonic())
                break
            stop.wait(0.02)
        connection.close()

    start = time.monotonic()
    engine.start()
    watcher = threading.Thread(target=watch_queue)
    watcher.start()
    while ProofJob.objects.filter(status__in=["queued", "running"]).exists():
        time.sleep(0.05)
    end = time.monotonic()
    stop.set()
    watcher.join()
    engine.stop()

    elapsed = end - start
    jobs = list(ProofJob.objects.all())
    failed = [j.job_id for j in jobs if j.status != "done"]
    spans = [a for spans in engine.stats.busy.values() for a, _ in spans]
    first_busy = min(spans) if spans else start
    # A small mix is claimed whole before any worker starts: the window is then empty, not negative.
    q_end = max(queue_empty_at[0] if queue_empty_at else end, first_busy)
    busy_q = engine.stats.busy_fraction(first_busy, q_end)
    busy_all = engine.stats.busy_fraction(start, end)

    lines = [f"# Engine benchmark ({args.backend} backend, scale {args.scale})", "",
             f"{total} jobs ({', '.join(f'{k}={n}' for k, n in mix.items())}), {len(engine.workers)} worker(s), "
             f"{args.synth_workers} synthesis process(es), {args.finalizers} finalizer(s), "
             f"{engine.proving_processes} proving process(es), {os.cpu_count()} CPU cores; "
             f"wall {elapsed:.1f}s; failed: {len(failed)}", "",
             "| kind | jobs | partitions | proofs/min | mean job wall s |", "|---|---|---|---|---|"]
    for kind in mix:
        done = [j for j in jobs if j.proof_kind == kind and j.status == "done"]
        walls = [j.timings["wall_ms"] / 1000 for j in done]
        lines.append(f"| {kind} | {len(done)} | {sum(j.total_partitions for j in done)} | "
                     f"{len(done) / elapsed * 60:.1f} | {statistics.mean(walls) if walls else 0:.2f} |")
    done_all = sum(1 for j in jobs if j.status == "done")
    lines.append(f"| **all** | {done_all} | {sum(j.total_partitions for j in jobs if j.status == 'done')} | "
                 f"{done_all / elapsed * 60:.1f} | |")
    phases = {}
    for key in ("synthesis_ms", "ntt_ms", "msm_g1_ms", "msm_g2_ms", "gpu_ms", "finalize_ms"):
        values = [j.timings.get(f"mean_{key}") for j in jobs if j.status == "done" and f"mean_{key}" in j.timings]
        phases[key] = statistics.mean(values) if values else float("nan")
    lines += ["", "Mean per-partition phase times (ms): " + ", ".join(f"{k[:-3]} {v:.1f}" for k, v in phases.items()),
              "(device part = gpu: NTTs + G1 MSMs; finalize = G2 MSM + assembly + verification)", "",
              "| worker | busy while queue non-empty | busy over the run |", "|---|---|---|"]
    for wid, _ in engine.workers:
        lines.append(f"| {wid} | {busy_q.get(wid, 0) * 100:.1f}% | {busy_all.get(wid, 0) * 100:.1f}% |")
    mean_q = statistics.mean(busy_q.get(w, 0) for w, _ in engine.workers)
    lines.append(f"| **mean** | {mean_q * 100:.1f}% | "
                 f"{statistics.mean(busy_all.get(w, 0) for w, _ in engine.workers) * 100:.1f}% |")
    lines.append(f"\nqueue non-empty for {q_end - first_busy:.1f}s of the {elapsed:.1f}s run")
    text = "\n".join(lines)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")
    if failed:
        raise SystemExit(f"{len(failed)} job(s) did not finish: {failed[:5]}")


if __name__ == "__main__":
    main()
