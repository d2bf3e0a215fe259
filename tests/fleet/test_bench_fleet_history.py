"""Smoke test of bench/fleet_history.py at a tiny size, on SQLite and PostgreSQL: it runs and reports."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.services import services_up

BENCH = Path(__file__).resolve().parents[2] / "bench" / "fleet_history.py"


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_fleet_history_bench_runs(database: str) -> None:
    if database == "postgres" and (reason := services_up()):
        pytest.skip(reason)
    out = subprocess.run([sys.executable, str(BENCH), "--sources", "3", "--workers", "2", "--minutes", "2",
                          "--database", database, "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    [result] = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["database"] == ("postgresql" if database == "postgres" else "sqlite")
    # 3 sources x (engine row + 2 workers + 1 GPU) for the two minutes; the last poll, on the third minute's
    # first instant, opens it with an engine row only (no time observed in it yet)
    assert result["rows"] == 3 * 4 * 2 + 3
    assert result["batch_ms_p50"] > 0 and result["observe_us_p50"] > 0
