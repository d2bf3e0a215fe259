"""`make gpucheck`: says "no GPU" and exits 0 here, under a Python without our packages; on a GPU host
it refuses a missing wheelhouse or one made for another Python, bounds every step, and writes one
Markdown report whatever happens."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpu_engine.gpucheck import check, wheelhouse

ROOT = Path(__file__).resolve().parents[2]
HAS_GPU = check.detect_gpu()[0]
FAKE_GPU = lambda: (True, "Fake GPU")  # noqa: E731 - a detector that finds one


@pytest.mark.skipif(HAS_GPU, reason="this machine has a GPU")
def test_no_gpu_exits_zero_without_site_packages():
    proc = subprocess.run([sys.executable, "-S", "-m", "gpu_engine.gpucheck"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("gpucheck: no GPU on this machine (")


@pytest.mark.skipif(HAS_GPU, reason="this machine has a GPU")
def test_make_gpucheck_says_no_gpu():
    proc = subprocess.run(["make", "-s", "gpucheck", f"PYTHON={sys.executable}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "no GPU on this machine" in proc.stdout


def _manifest(folder: Path, python: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pycuda-2026.1.tar.gz").write_bytes(b"x" * 10)
    (folder / "pytest-9.2.0-py3-none-any.whl").write_bytes(b"x" * 20)
    (folder / wheelhouse.MANIFEST).write_text(json.dumps({
        "python": python, "files": {"pycuda-2026.1.tar.gz": 10, "pytest-9.2.0-py3-none-any.whl": 20},
        "imports": {"pytest": "pytest", "pycuda": "pycuda"}, "requirements": ["pytest"], "build_requirements": [],
        "pycuda": "pycuda-2026.1.tar.gz"}))
    return folder


def test_a_gpu_host_refuses_a_missing_wheelhouse(tmp_path, capsys):
    rc = check.main(["--wheelhouse", str(tmp_path / "none"), "--report", str(tmp_path / "r.md")], detect=FAKE_GPU)
    assert rc == 2 and "refusing: no wheelhouse at" in capsys.readouterr().err
    assert not (tmp_path / "r.md").exists()


def test_a_gpu_host_refuses_a_wheelhouse_for_another_python(tmp_path, capsys):
    other = "3.12" if sys.version_info[:2] != (3, 12) else "3.11"
    folder = _manifest(tmp_path / "wh", other)
    rc = check.main(["--wheelhouse", str(folder), "--report", str(tmp_path / "r.md")], detect=FAKE_GPU)
    err = capsys.readouterr().err
    assert rc == 2 and f"was made for Python {other}, this machine runs Python" in err


def test_the_wheelhouse_for_the_gpu_machines_python_is_accepted(tmp_path):
    assert check.wheelhouse_refusal(_manifest(tmp_path / "wh", "3.12"), "3.12") is None
    (tmp_path / "wh" / "pytest-9.2.0-py3-none-any.whl").unlink()
    assert "missing" in check.wheelhouse_refusal(tmp_path / "wh", "3.12")


def test_steps_are_bounded_and_the_report_says_what_happened(tmp_path):
    run = check.Run(time.monotonic() + 30)
    assert run.run("a passing step", [sys.executable, "-c", "print('fine')"]).ok
    slow = run.run("a slow step", [sys.executable, "-c", "import time; print('started', flush=True); time.sleep(20)"],
                   cap=1)
    assert not slow.ok and slow.note.startswith("timed out after")
    assert not run.run("a failing step", [sys.executable, "-c", "raise SystemExit(3)"]).ok
    run.deadline = time.monotonic()
    assert run.run("too late", [sys.executable, "-c", "pass"]).note == "skipped: the time budget is spent"
    report = tmp_path / "report.md"
    check.write_report(report, run, "Fake GPU", "| module | kernel |\n|---|---|")
    text = report.read_text()
    assert text.startswith("# gpucheck: FAIL\n") and "- GPU: Fake GPU" in text
    assert "| a slow step | FAILED |" in text and "| a failing step | FAILED | 0 | exit 3 |" in text
    assert "## Kernel resources" in text and "## a failing step: output (tail)" not in text  # no output, no section


def test_a_steps_table_is_kept_whole_apart_from_its_warnings():
    """The kernel table must reach the report whole: on the first GPU run the compiler's warnings on
    stderr filled the step's tail and cut the table's first rows off."""
    run = check.Run(time.monotonic() + 30)
    table = "\n".join(f"| ntt.cu | kernel_{i} |" for i in range(40))
    step = run.run("a table and noise", [sys.executable, "-c", f"import sys; print({table!r}); "
                                         f"sys.stderr.write('warning: noise\\n' * 2000)"])
    assert step.ok and step.stdout.strip() == table
    assert "kernel_0 |" not in step.output  # the tail alone would have lost it


def test_pycudas_build_finds_the_toolkit_behind_an_nvcc_wrapper(tmp_path):
    root = check.cuda_root()
    assert root is not None and (root / "include" / "cuda.h").is_file()
    env = check._pycuda_env(tmp_path)
    assert env["PATH"].startswith(f"{root / 'bin'}:")  # PyCUDA takes CUDA_ROOT from the first nvcc on PATH
    assert "parallel = " in (tmp_path / "build-parallel.cfg").read_text()
    options = (Path(env["HOME"]) / ".aksetup-defaults.py").read_text()  # read by PyCUDA's setup
    assert f"CUDA_ROOT = {str(root)!r}" in options
    assert f"CUDA_ENABLE_CURAND = {(root / 'include' / 'curand.h').is_file()}" in options
