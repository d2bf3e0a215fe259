"""The chart and timeline queries on a database seeded with 1,000,000 partition runs (SQLite and
PostgreSQL, seeded by one bulk INSERT ... SELECT in bench/history.py) read through their indexes:
the plan of every query names the window index instead of scanning the table (the 24 h and 7 d
charts: the history rollup's unique index, and neither runs nor jobs table). Timings are the
benchmark's to print, not this test's to assert."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROWS = 1_000_000

pytestmark = pytest.mark.slow


def _plans(database: str) -> dict:
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "history.py"), "--rows", str(ROWS), "--database",
                          database, "--explain-only", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert out.returncode == 0, out.stderr[-3000:]
    (result,) = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["rows"] == ROWS
    return result


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_chart_queries_use_the_window_indexes_at_a_million_runs(database):
    if database == "postgres":
        psycopg = pytest.importorskip("psycopg")
        from tests.services import PG_SERVER

        try:
            psycopg.connect(f"{PG_SERVER}/postgres", connect_timeout=3).close()
        except psycopg.OperationalError as exc:
            pytest.skip(f"no PostgreSQL server: {exc}")
    result = _plans(database)
    assert set(result["queries"]) == {"timeline 10m", "timeline 60m", "throughput 1h", "latency 1h", "latency 24h",
                                      "latency 7d", "throughput 24h", "throughput 7d", "telemetry 24h"}
    for name, q in result["queries"].items():
        assert q["plans"], name
        assert q["uses_index"], f"{name}: {q['plans']}"
        for plan in q["plans"]:  # no full scan of the big tables
            assert "SCAN gpu_engine_partitionrun\n" not in plan + "\n" and "Seq Scan on gpu_engine_partitionrun" not in plan
        if name in ("latency 24h", "latency 7d", "throughput 24h", "throughput 7d"):  # the rollup alone
            assert all("historyrollup" in p and "partitionrun" not in p and "proofjob" not in p for p in q["plans"]), name
