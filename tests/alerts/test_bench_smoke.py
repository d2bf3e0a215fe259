"""bench/alerts.py runs end to end at tiny sizes and prints both figures (it measures; this checks it runs)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_alerts_bench_runs() -> None:
    done = subprocess.run([sys.executable, "bench/alerts.py", "--sources", "3", "--engines", "1", "--seconds", "0.5",
                           "--trials", "2", "--for", "0", "--eval-secs", "0.2", "--group-wait", "0.1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "evaluation: 3 fleet sources + 1 local engines" in done.stdout and "% of one core" in done.stdout
    assert "condition -> webhook over 2 trials" in done.stdout and "p95" in done.stdout
