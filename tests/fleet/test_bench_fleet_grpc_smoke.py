"""bench/fleet.py at a tiny size with `--grpc`: two sources, one HTTP and one gRPC, both polled by a
real dashboard; the row says so and carries a poll latency for each half (the figures are the
bench's business, not the test's)."""
from __future__ import annotations

import math
import subprocess
import sys

import pytest

from tests.fleet.dashboard import ROOT

pytestmark = pytest.mark.slow


def test_the_fleet_bench_runs_half_http_half_grpc() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "fleet.py"), "--sources", "2", "--grpc",
                           "--seconds", "2", "--clients", "0", "--interval", "0.5"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    header, row = lines[-2].split(), lines[-1].split()
    assert header[:3] == ["sources", "grpc", "clients"]
    assert row[:3] == ["2", "1", "0"]
    http_p50, grpc_p50 = (float(cell.split("/")[0]) for cell in row[-2:])
    assert math.isfinite(http_p50) and math.isfinite(grpc_p50) and grpc_p50 > 0
    assert row[-3] == "0"  # no WebSocket errors
