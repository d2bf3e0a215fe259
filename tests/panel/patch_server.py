"""A panel server whose one engine walks through a scripted run of changes, then holds still.

    python -m tests.panel.patch_server --port P --steps N --pace SECS

Daphne serving the real ASGI app with a SnapshotPublisher on its loop (as runprover does), fed by a
tracker that takes N steps (jobs through every phase, a failure, queue depth) and then stops with a
partition left on the GPU (an open phase). Prints READY when serving and `DONE <seq>` once the last
snapshot is published; the heartbeat is long, so that snapshot stays the latest while a test looks.
"""
from __future__ import annotations

import argparse
import os
import threading
import time


def _script(tracker, steps: int, pace: float, done) -> None:
    n = step = 0
    while step < steps:
        job = f"ps-snap-1000-{n}-7"
        tracker.register_job(job, "snap-update", 4)
        tracker.set_queue_depth(n % 3)
        for p in range(4):
            for action in ("synth_start", "synth_end", "gpu_start", "finalize_start", "gpu_end"):
                time.sleep(pace)
                step += 1
                if action == "synth_start":
                    tracker.partition_synth_start(job, p)
                elif action == "synth_end":
                    tracker.partition_synth_end(job, p)
                elif action == "gpu_start":
                    tracker.partition_gpu_start(job, p, p % 2)
                elif action == "finalize_start":
                    tracker.partition_finalize_start(job, p, p % 2)
                elif p == 3 and n % 2:
                    tracker.partition_failed(job, p, f"MSM kernel launch failed <{n}>")
                else:
                    tracker.partition_gpu_end(job, p, p % 2)
                if step >= steps and action == "gpu_start":
                    done()  # stops with this partition on the GPU: an open phase
                    return
        tracker.job_completed(job, n % 2 == 0)
        n += 1
    done()


def serve(port: int, steps: int, pace: float) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vastmanager.settings")
    django.setup()
    from daphne import server as daphne_server
    from daphne.endpoints import build_endpoint_description_strings

    from gpu_engine.publisher import SnapshotPublisher
    from gpu_engine.tracker import StatusTracker
    from vastmanager.asgi import application

    tracker = StatusTracker(synth_max=4, backend="cpu", grace_secs=5)
    tracker.register_workers([(0, 0), (1, 0)])
    pub = SnapshotPublisher(tracker, "patch-engine", max_rate=10.0, heartbeat_secs=120.0)

    def done() -> None:
        seq = -1
        while seq != pub.seq:  # the publisher sends the last changes (it coalesces them for 0.1 s)
            seq = pub.seq
            time.sleep(1.5)
        print(f"DONE {seq}", flush=True)

    def ready() -> None:
        pub.attach_loop(daphne_server.twisted_loop)
        pub.start()
        print("READY", flush=True)

    def go() -> None:
        time.sleep(3)  # the test opens its page first
        _script(tracker, steps, pace, done)

    threading.Thread(target=go, daemon=True).start()
    server = daphne_server.Server(application=application, endpoints=build_endpoint_description_strings(
        host="127.0.0.1", port=port), ready_callable=ready, verbosity=0, signal_handlers=True)
    try:
        server.run()
    finally:
        pub.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--pace", type=float, default=0.05)
    args = ap.parse_args()
    serve(args.port, args.steps, args.pace)
