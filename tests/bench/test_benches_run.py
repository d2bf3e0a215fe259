"""Every bench/ script runs at tiny sizes and prints its figures: a bench that breaks fails here.

Each script runs as the operator runs it (a subprocess from the repository root) with the smallest
arguments it takes; the test checks the exit status and that the figures' lines are there with
numbers in them, never the figures' values (speed is the benches' business, not the suite's).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
NUMBER = r"[\d,]+(?:\.\d+)?"

pytestmark = pytest.mark.bench


def run_bench(script: str, *args: str, tmp_path: Path, timeout: float = 300, **env: str) -> str:
    """Run `bench/<script>` with `args` on a data directory of its own; its output (exit 0 asserted)."""
    environ = dict(os.environ, PYTHONPATH=str(ROOT), VASTMANAGER_DATA_DIR=str(tmp_path / "data"),
                   VASTMANAGER_PARAMS_DIR=str(ROOT / "data" / "params"), LOG_LEVEL="WARNING", **env)
    for var in ("DATABASE_URL", "REDIS_URL"):  # the benches pick their own database and layer
        if var not in env:
            environ.pop(var, None)
    done = subprocess.run([sys.executable, str(BENCH / script), *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"bench/{script} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def table_row(output: str, first_cell: str) -> list[str]:
    """The cells of the output line whose first cell is `first_cell`."""
    for line in output.splitlines():
        cells = line.split()
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row starting with {first_cell!r} in:\n{output}")


def test_every_bench_script_has_a_smoke_test() -> None:
    scripts = {p.stem for p in BENCH.glob("*.py")}
    # A smoke test is `test_<script>_bench_runs`, here or beside the room it measures.
    tests = Path(__file__).resolve().parents[1]
    tested = {m for f in tests.rglob("test_*.py") for m in re.findall(r"^def test_(\w+)_bench_runs\(", f.read_text(), re.M)}
    assert scripts - tested == set(), "bench scripts without a smoke test"
    assert tested - scripts == set(), "smoke tests of bench scripts that are gone"


def test_tracker_bench_runs(tmp_path) -> None:
    out = run_bench("tracker.py", "--seconds", "0.2", "--threads", "2", "--snapshots", "5", tmp_path=tmp_path)
    assert re.search(rf"transitions/s, 1 thread:\s+{NUMBER}", out)
    assert re.search(rf"transitions/s, 2 threads on 4 shared workers:\s+{NUMBER}", out)
    assert re.search(rf"snapshot\(\), 64 jobs x 16 partitions:\s+median {NUMBER} ms", out)


def test_ntt_numpy_probe_bench_runs(tmp_path) -> None:
    out = run_bench("ntt_numpy_probe.py", tmp_path=tmp_path)
    for size in ("512", "4096", "32768"):
        row = table_row(out, size)
        assert len(row) == 3 and all(re.fullmatch(NUMBER, cell) for cell in row)


@pytest.mark.slow
def test_groth16_bench_runs(tmp_path) -> None:
    out = run_bench("groth16.py", "--max-log", "10", "--repeat", "1", tmp_path=tmp_path)
    for kind in ("porep-c2", "snap-update", "window-post", "winning-post"):
        row = table_row(out, kind)
        assert len(row) == 10 and all(re.fullmatch(NUMBER, cell) for cell in row[1:])
    assert all(re.fullmatch(NUMBER, cell) for cell in table_row(out, "2^10")[1:])


@pytest.mark.slow
def test_engine_bench_runs(tmp_path) -> None:
    out = run_bench("engine.py", "--mix", "winning-post=1", "--workers", "1", "--params-dir",
                    str(ROOT / "data" / "params"), "--out", str(tmp_path / "engine.md"), tmp_path=tmp_path)
    assert "failed: 0" in out
    assert re.search(rf"\| winning-post \| 1 \| 1 \| {NUMBER} \| {NUMBER} \|", out)
    assert re.search(rf"queue non-empty for {NUMBER}s of the {NUMBER}s run", out)  # never negative
    assert "| **all** | 1 | 1 |" in (tmp_path / "engine.md").read_text()  # the table it writes


@pytest.mark.slow
def test_history_bench_runs(tmp_path) -> None:
    out = run_bench("history.py", "--rows", "1000", tmp_path=tmp_path)
    for query in ("timeline 10m", "timeline 60m", "throughput 1h", "latency 1h", "latency 24h"):
        assert re.search(rf"{query}\s+{NUMBER} ms\s+index: yes", out), query
    assert re.search(rf"/metrics scrape, 1000 live partitions: {NUMBER} ms", out)


@pytest.mark.slow
def test_fleet_collector_bench_runs(tmp_path) -> None:
    out = run_bench("fleet_collector.py", "--sources", "2", "--seconds", "1", "--interval", "0.5", tmp_path=tmp_path)
    row = table_row(out, "2")
    assert row[-1] == "0", out  # no source failing
    assert re.fullmatch(NUMBER + "%", row[1]) and float(row[2]) > 0  # CPU share, polls per second


@pytest.mark.slow
def test_fleet_bench_runs(tmp_path) -> None:
    out = run_bench("fleet.py", "--sources", "2", "--seconds", "2", "--interval", "0.5", "--clients", "1",
                    tmp_path=tmp_path)
    row = table_row(out, "2")
    assert row[2] == "1" and row[15] == "0", out  # one client, no errors
    assert int(row[5]) > 0  # polls in the window
    assert float(row[9].replace(",", "")) > 0 and float(row[11].replace(",", "")) > 0, out  # whole frames, patches


@pytest.mark.slow
def test_websocket_bench_runs(tmp_path) -> None:
    from tests.services import services_up

    processes = ["1", "2"] if services_up() is None else ["1"]  # two processes share one Redis
    out = run_bench("websocket.py", "--clients", "2", "--seconds", "1", "--compression", "on", "off",
                    "--processes", *processes, tmp_path=tmp_path)
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["1"], ["2"])]
    assert {(row[0], row[1]) for row in rows} == {(p, c) for p in processes for c in ("on", "off")}, out
    for row in rows:  # procs deflate kind clients frames ... KB/cl/s ... errors
        assert row[2] == "full" and row[3] == "2" and int(row[4]) > 0 and float(row[11]) > 0 and row[-1] == "0", out
    cost = run_bench("websocket.py", "--deflate-cost", tmp_path=tmp_path)
    assert "us per further client" in cost and "% of a core per client" in cost, cost
    # Patch frames carry their latency in the section's data-published-at; both clients; clients in 2 processes.
    for client in ("lean", "websockets"):
        out = run_bench("websocket.py", "--clients", "2", "--seconds", "2", "--patch", "--client", client,
                        "--client-procs", "2", tmp_path=tmp_path)
        row = table_row(out, "1")
        assert row[2] == "patch" and row[3] == "2" and int(row[4]) > 0 and re.fullmatch(NUMBER, row[8]), out
        assert row[-1] == "0", out
    # Whole frames and patch frames side by side in one run (bytes per client for each).
    out = run_bench("websocket.py", "--clients", "2", "--seconds", "2", "--frames", "full", "patch", tmp_path=tmp_path)
    kinds = {row[2]: float(row[11]) for row in (line.split() for line in out.splitlines()) if row[:1] == ["1"]}
    assert set(kinds) == {"full", "patch"} and kinds["patch"] < kinds["full"], out


@pytest.mark.slow
def test_web_latency_bench_runs(tmp_path) -> None:
    out = run_bench("web_latency.py", "--clients", "2", "--seconds", "2", "--repeat", "1", "--on", "1",
                    tmp_path=tmp_path, timeout=600)
    for mode in ("in-thread", "pool"):
        row = table_row(out, mode)
        assert row[-1] == "0", out
        assert re.fullmatch(NUMBER + "%", row[6]) and float(row[6].rstrip("%")) > 0  # snapshots delivered


@pytest.mark.slow
def test_slow_clients_bench_runs(tmp_path) -> None:
    out = run_bench("slow_clients.py", "--clients", "2", "--seconds", "2", "--waves", "1", tmp_path=tmp_path,
                    timeout=600)
    assert re.search(rf"RSS before {NUMBER} MB; fast clients {NUMBER} frames/s", out)
    assert re.search(rf"wave 1: RSS peak {NUMBER} MB, end {NUMBER} MB", out)


def test_gpu_bench_runs(tmp_path) -> None:
    """Without a device it says why and exits 0; with one, at tiny sizes, it prints its tables."""
    out = run_bench("gpu.py", "--ntt", "4", "5", "--msm", "4", "5", "--cpu-max-log", "5", "--repeat", "1",
                    "--out", str(tmp_path / "gpu.md"), tmp_path=tmp_path)
    assert "Not run: no CUDA device" in out or "| G1 MSM |" in out, out
    assert (tmp_path / "gpu.md").exists()


@pytest.mark.slow
@pytest.mark.emulation
def test_gpu_bench_runs_on_the_host_build_of_the_kernels(tmp_path) -> None:
    from gpu_engine.backends.emulation import EmulatedBackend, EmulationBuildError

    try:
        EmulatedBackend().close()
    except EmulationBuildError as exc:
        pytest.skip(f"no host build of the kernels here: {exc}")
    out = run_bench("gpu.py", "--emulate", "--ntt", "4", "5", "--msm", "4", "5", "--cpu-max-log", "5",
                    "--repeat", "1", "--out", str(tmp_path / "gpu.md"), tmp_path=tmp_path)
    assert re.search(rf"\| 2\^5 \| 4 \| {NUMBER} \|", out), out
    assert re.search(rf"\| emulation \| {NUMBER} \|", out) and re.search(rf"\| cpu \| {NUMBER} \|", out)


@pytest.mark.slow
def test_circom_bench_runs(tmp_path) -> None:
    """The CPU path at 2^4 (the cuda column is skipped without a device), in the bench's own cache (its
    2^4 ceremony takes seconds, once)."""
    from tests.circom import tools

    reason = tools.unavailable_reason()
    if reason or shutil.which("node") is None:
        pytest.skip(reason or "no node")
    out = run_bench("circom.py", "--sizes", "4", "--repeat", "1", "--processes", "1", "--backends", "cpu",
                    tmp_path=tmp_path, timeout=900)
    assert re.search(rf"2\^4 \({NUMBER} constraints\): snarkjs prove {NUMBER} ms", out), out
    for engine in ("cpu", "cpu x1"):  # every step's time, the total, the ratio to snarkjs
        assert re.search(rf"^  {engine}(\s+{NUMBER}){{12}}\s+{NUMBER}x$", out, re.M), (engine, out)
