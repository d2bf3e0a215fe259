"""docs/prometheus-alerts.yml is valid for Prometheus (`promtool check rules`) and its rules fire on
the series they are about (`promtool test rules`, tests/alerts/prometheus_rules_test.yml)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(PROMTOOL is None, reason="promtool missing: apt-get install prometheus (make promtool)")


def test_the_rules_file_passes_promtool_check() -> None:
    done = subprocess.run([PROMTOOL, "check", "rules", str(ROOT / "docs/prometheus-alerts.yml")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 9 rules found" in done.stdout


def test_the_rules_fire_on_their_series() -> None:
    done = subprocess.run([PROMTOOL, "test", "rules", "prometheus_rules_test.yml"], cwd=ROOT / "tests/alerts",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
