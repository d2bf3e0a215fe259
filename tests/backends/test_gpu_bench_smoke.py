"""bench/gpu.py at tiny sizes on the host build of the kernels (a check of the script, not a measurement),
including the hot-bucket case, and its "no GPU" exit."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.backends.helpers import NO_GPU_REASON

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "gpu.py"


def test_emulated_bench_prints_every_table_and_the_hot_bucket_drop(tmp_path):
    out = tmp_path / "gpu.md"
    proc = subprocess.run([sys.executable, str(BENCH), "--emulate", "--ntt", "4", "5", "--msm", "4", "5",
                           "--hot-log", "9", "--cpu-max-log", "9", "--repeat", "1", "--no-partition", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = out.read_text()
    assert "| 2^5 |" in text and "| 0/1 witness MSM 2^9 |" in text
    before = re.search(r"\| one thread per bucket .*? \| [\d.]+ \| ([\d.]+)% \| (\d+) \|", text)
    after = re.search(r"\| split in chunks of \d+ .*? \| [\d.]+ \| ([\d.]+)% \| (\d+) \|", text)
    assert before and after, text
    assert float(after.group(1)) < float(before.group(1)) / 4 and int(after.group(2)) < int(before.group(2))


@pytest.mark.skipif(NO_GPU_REASON is None, reason="this machine has a GPU")
def test_without_a_gpu_the_bench_says_so(tmp_path):
    out = tmp_path / "gpu.md"
    proc = subprocess.run([sys.executable, str(BENCH), "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "Not run: no CUDA device" in out.read_text()
