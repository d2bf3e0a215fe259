"""bench/fleet_big_source.py runs at a tiny size: a 2,000-worker source (over the 512-worker cap)
beside a healthy one, for a few seconds; the healthy one streams and the big one is refused."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_fleet_big_source_bench_runs() -> None:
    spec = importlib.util.spec_from_file_location("bench_fleet_big_source", ROOT / "bench" / "fleet_big_source.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.run(workers=2000, seconds=3.0, interval=0.5)
    assert result["huge_state"] == "malformed" and "FLEET_MAX_WORKERS" in result["huge_error"]
    assert result["healthy_fps"] > 0.5
    assert result["page_bytes"] > 0 and result["metrics_bytes"] > 0
    assert result["errors"] == []
