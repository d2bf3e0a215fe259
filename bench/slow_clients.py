"""Slow WebSocket clients: the serving process's memory while clients that never read stay connected.

    .venv/bin/python bench/slow_clients.py [--root CHECKOUT] [--clients 50] [--seconds 60] [--waves 2]

Starts `runprover --demo --backend cpu` of CHECKOUT (default: this one) on a throwaway site, with
three clients that read every frame; after a warm-up connects N clients that complete the handshake
and then never read (4 KiB receive buffers), for S seconds, while the engine proves. Prints the RSS
of the serving process (psutil) before, at its peak, at the end and 10 s after the slow clients
left, the fast clients' frame rate before and during, and how many slow clients the server still
held at the end. A second wave of slow clients (after the first left) shows whether the first
one's memory was given back: it peaks no higher when it was. Run it on an older checkout
(`git worktree add /tmp/base <commit>`) to compare.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.credentials import TOKEN
from tests.panel.wsclients import slow_client_run
from tests.process_support import ServedSite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout whose server is measured")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--waves", type=int, default=2, help="rounds of slow clients, one after the other")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vm-slow-") as tmp:
        params = Path(tmp) / "params"
        site = ServedSite(Path(tmp) / "site", TOKEN, root=args.root, VASTMANAGER_PARAMS_DIR=str(params),
                          LOG_LEVEL="WARNING")
        site.manage("genparams", "--params-dir", str(params))
        proc = site.start("runprover", "--demo", "--backend", "cpu", "--synth-workers", "1")
        try:
            figures = slow_client_run(proc.pid, site.port, TOKEN, slow=args.clients, seconds=args.seconds,
                                      waves=args.waves, log=lambda line: print(f"  {line}", flush=True))
        finally:
            site.stop()
    print(f"checkout {args.root}: {args.clients} slow clients for {args.seconds:.0f}s while proving, "
          f"{args.waves} wave(s)")
    print(f"  RSS before {figures['rss_before_mb']:.0f} MB; fast clients {figures['fast_rate_before']:.1f} frames/s")
    for wave in range(1, args.waves + 1):
        k = "" if wave == 1 else f"_{wave}"
        print(f"  wave {wave}: RSS peak {figures['rss_peak_mb' + k]:.0f} MB, end {figures['rss_end_mb' + k]:.0f} MB, "
              f"10 s after they left {figures['rss_after_leave_mb' + k]:.0f} MB; fast clients "
              f"{figures['fast_rate_during' + k]:.1f} frames/s; slow clients still connected at the end "
              f"{figures['slow_still_connected' + k]:.0f}")

if __name__ == "__main__":
    main()
