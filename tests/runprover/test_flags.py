"""Bad runprover flag values exit non-zero with a message naming the problem."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.runprover.helpers import ROOT, Site


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return Site(tmp_path_factory.mktemp("flags"), tmp_path_factory.mktemp("flag-params"))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--workers", "0"], "expected a positive integer, got 0"),
        (["--synth-workers", "x"], "expected a positive integer, got 'x'"),
        (["--finalizers", "0"], "expected a positive integer, got 0"),
        (["--memory-budget", "8 parsecs"], "unknown size unit 'parsecs'"),
        (["--memory-budget", "0"], "--memory-budget must be positive"),
        (["--bind", "8000"], "--bind expects HOST:PORT"),
        (["--bind", "localhost:http"], "--bind port must be a number"),
        (["--bind", "localhost:70000"], "--bind port must be 0-65535"),
        (["--gpus", "0,zero"], "--gpus expects auto, none or a list"),
        (["--gpus", "1,1"], "distinct non-negative ordinals"),
        (["--backend", "tpu"], "invalid choice: 'tpu'"),
        (["--gpus", "none", "--backend", "cuda"], "--gpus none cannot be combined with --backend cuda"),
        (["--engine-id", "has space"], "without spaces"),
        (["--memory-budget", "1KiB", "--backend", "cpu"], "raise --memory-budget"),
    ],
)
def test_bad_flag_is_rejected(site, args, message):
    result = subprocess.run([sys.executable, "manage.py", "runprover", "--no-serve", *args], cwd=ROOT, env=site.env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


def test_unmigrated_database_is_reported(tmp_path):
    env = {**os.environ, "VASTMANAGER_DATA_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}"}
    result = subprocess.run([sys.executable, "manage.py", "runprover", "--no-serve"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "run `manage.py migrate` first" in result.stderr


@pytest.mark.slow
def test_submitproof_rejects_bad_kind_and_reports_existing(site):
    bad = subprocess.run([sys.executable, "manage.py", "submitproof", "--kind", "porep"], cwd=ROOT, env=site.env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "valid kinds: porep-c2, snap-update, window-post, winning-post" in bad.stderr
    first = site.manage("submitproof", "--kind", "window-post", "--job-id", "sp-1").stdout
    again = site.manage("submitproof", "--kind", "window-post", "--job-id", "sp-1").stdout
    assert first.strip() == "sp-1\twindow-post\tqueued"
    assert again.strip() == "sp-1\twindow-post\texists (queued)"


def test_address_in_use_is_reported_before_proving(site):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = subprocess.run([sys.executable, "manage.py", "runprover", "--backend", "cpu", "--bind",
                                 f"127.0.0.1:{port}"], cwd=ROOT, env=site.env, capture_output=True, text=True,
                                timeout=120)
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
