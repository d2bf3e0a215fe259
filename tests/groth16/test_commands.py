"""genparams, proveonce and verifyproof, driven as an operator would."""
from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError


ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bundle_file(tmp_path_factory, params_dir) -> Path:
    out = tmp_path_factory.mktemp("bundles") / "wp.json"
    stdout = StringIO()
    call_command("proveonce", "--kind", "winning-post", "--job-id", "ps-winning-post-1000-42-7",
                 "--out", str(out), "--params-dir", str(params_dir), stdout=stdout)
    assert "proved and verified" in stdout.getvalue()
    return out


def _verify(path: Path) -> str:
    stdout = StringIO()
    call_command("verifyproof", str(path), stdout=stdout)
    return stdout.getvalue()


def test_genparams_reports_progress_and_readiness(tmp_path):
    stdout = StringIO()
    call_command("genparams", "--kind", "winning-post", "--params-dir", str(tmp_path), stdout=stdout)
    text = stdout.getvalue()
    assert "points (100%)" in text and "ready: " in text
    assert len(list(tmp_path.glob("winning-post-*.params"))) == 1


def test_proveonce_writes_a_bundle_with_the_full_job_id(bundle_file):
    bundle = json.loads(bundle_file.read_text())
    assert bundle["job_id"] == "ps-winning-post-1000-42-7"
    assert [p["index"] for p in bundle["partitions"]] == [0]


def test_verifyproof_accepts_a_valid_bundle(bundle_file):
    assert "all 1 partition(s) verify" in _verify(bundle_file)


def test_verifyproof_names_the_failing_partition(bundle_file, tmp_path):
    bundle = json.loads(bundle_file.read_text())
    bundle["partitions"][0]["public_inputs"][0] = "1"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(bundle))
    with pytest.raises(CommandError, match=r"partition\(s\) 0 of 1 failed") as info:
        _verify(bad)
    assert info.value.returncode == 1


@pytest.mark.parametrize(
    "content, message",
    [("{not json", "not JSON"), ('{"proof_kind": "winning-post"}', "job_id: missing"), (None, "cannot read")],
)
def test_verifyproof_says_what_is_malformed(tmp_path, content, message):
    path = tmp_path / "b.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CommandError, match=message) as info:
        _verify(path)
    assert info.value.returncode == 2


def test_verifyproof_exit_status_from_the_shell(bundle_file, tmp_path):
    bundle = json.loads(bundle_file.read_text())
    bundle["partitions"][0]["proof"]["a"], bundle["partitions"][0]["proof"]["c"] = (
        bundle["partitions"][0]["proof"]["c"], bundle["partitions"][0]["proof"]["a"])
    bad = tmp_path / "swapped.json"
    bad.write_text(json.dumps(bundle))
    run = subprocess.run([sys.executable, "manage.py", "verifyproof", str(bad)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, run.stderr
    assert "partition 0: INVALID" in run.stdout
