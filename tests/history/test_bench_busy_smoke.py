"""bench/history.py --busy at tiny sizes: it seeds a busy hour and a busy day and reports the bytes
and time of the activity region and the history pages (the day and week pages also as before the
rollup, read from the runs, with --before)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_busy_bench_reports_bytes_and_time_of_each_page():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "history.py"), "--busy", "--busy-rows", "600",
                          "--day-rows", "900", "--before", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert (result["busy_rows"], result["day_rows"]) == (600, 900)
    assert set(result["pages"]) == {"activity region 10m", "activity region 60m", "history page 1h", "history page 24h",
                                    "history page 7d", "history page 24h (rows)", "history page 7d (rows)"}
    for page in result["pages"].values():
        assert page["bytes"] > 1000 and page["median_ms"] > 0
