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

from gpu_engine.groth16 import api

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bundle_file(tmp_path_factory, params_dir) -> Path:
    out = tmp_path_factory.mktemp("bundles") / "wp.json"
    stdout = StringIO()
    call_command("proveonce", "--kind", "winning-post", "--job-id", "ps-winning-post-1000-42-7",
                 "--out", str(out), "--params-dir", str(params_dir), stdout=stdout)
    assert "proved and verified" in stdout.getvalue()
    return out


@pytest.fixture
def verify(params_dir):
    def run(path: Path, *args: str) -> str:
        stdout = StringIO()
        call_command("verifyproof", str(path), "--params-dir", str(params_dir), *args, stdout=stdout)
        return stdout.getvalue()

    return run


@pytest.mark.django_db
def test_genparams_reports_progress_readiness_and_key(tmp_path):
    stdout = StringIO()
    call_command("genparams", "--kind", "winning-post", "--params-dir", str(tmp_path), stdout=stdout)
    text = stdout.getvalue()
    assert "points (100%)" in text and "ready: " in text
    assert len(list(tmp_path.glob("winning-post-*.params"))) == 1
    fingerprint = api.load_params("winning-post", tmp_path).vk.fingerprint()
    assert f"key {fingerprint}" in text


def test_proveonce_writes_a_bundle_with_the_full_job_id(bundle_file):
    bundle = json.loads(bundle_file.read_text())
    assert bundle["job_id"] == "ps-winning-post-1000-42-7"
    assert [p["index"] for p in bundle["partitions"]] == [0]


def test_verifyproof_accepts_a_valid_bundle(bundle_file, verify):
    assert "all 1 partition(s) verify against the engine's winning-post key" in verify(bundle_file)


def test_verifyproof_names_the_changed_inputs(bundle_file, tmp_path, verify):
    bundle = json.loads(bundle_file.read_text())
    bundle["partitions"][0]["public_inputs"][0] = "1"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(bundle))
    with pytest.raises(CommandError, match=r"partitions\[0\]\.public_inputs: not the inputs of "
                                           r"\(winning-post, ps-winning-post-1000-42-7, 0\)") as info:
        verify(bad)
    assert info.value.returncode == 1


@pytest.mark.parametrize(
    "content, message",
    [("{not json", "not JSON"), ('{"proof_kind": "winning-post"}', "job_id: missing"), (None, "cannot read")],
)
def test_verifyproof_says_what_is_malformed(tmp_path, content, message, verify):
    path = tmp_path / "b.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CommandError, match=message) as info:
        verify(path)
    assert info.value.returncode == 2


def test_verifyproof_exit_status_from_the_shell(bundle_file, tmp_path, params_dir):
    bundle = json.loads(bundle_file.read_text())
    bundle["partitions"][0]["proof"]["a"], bundle["partitions"][0]["proof"]["c"] = (
        bundle["partitions"][0]["proof"]["c"], bundle["partitions"][0]["proof"]["a"])
    bad = tmp_path / "swapped.json"
    bad.write_text(json.dumps(bundle))
    run = subprocess.run([sys.executable, "manage.py", "verifyproof", str(bad), "--params-dir",
                          str(params_dir)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, run.stderr
    assert "partition 0: INVALID" in run.stdout


def test_verifyproof_refuses_a_bundle_relabelled_with_another_job(bundle_file, tmp_path, verify):
    bundle = json.loads(bundle_file.read_text())
    bundle["job_id"] = "ps-winning-post-1000-42-8"
    relabelled = tmp_path / "relabelled.json"
    relabelled.write_text(json.dumps(bundle))
    with pytest.raises(CommandError) as info:
        verify(relabelled)
    assert info.value.returncode == 1
    assert str(info.value) == ("winning-post job ps-winning-post-1000-42-8: partitions[0].public_inputs: not the inputs "
                               "of (winning-post, ps-winning-post-1000-42-8, 0); partition(s) 0 of 1 failed "
                               "verification against the engine's winning-post key")


def test_verifyproof_against_an_exported_key_file(bundle_file, tmp_path, params_dir):
    key = tmp_path / "winning.key.json"
    call_command("exportkey", "--kind", "winning-post", "--out", str(key), "--params-dir", str(params_dir),
                 stdout=StringIO())
    stdout = StringIO()
    call_command("verifyproof", str(bundle_file), "--key", str(key), "--params-dir", str(tmp_path / "none"),
                 stdout=stdout)
    assert f"all 1 partition(s) verify against the key in {key}" in stdout.getvalue()
    other = tmp_path / "window.key.json"
    call_command("exportkey", "--kind", "window-post", "--out", str(other), "--params-dir", str(params_dir),
                 stdout=StringIO())
    with pytest.raises(CommandError, match="the bundle is a winning-post proof, the key file .* is for window-post"):
        call_command("verifyproof", str(bundle_file), "--key", str(other), stdout=StringIO())


def test_verifyproof_without_a_trusted_key_exits_3_naming_the_file(bundle_file, tmp_path, params_dir):
    for path in params_dir.glob("winning-post-*.params"):
        (tmp_path / path.name).write_bytes(path.read_bytes()[:-1])  # a copy, one byte short
    run = subprocess.run([sys.executable, "manage.py", "verifyproof", str(bundle_file), "--params-dir", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 3, run.stderr
    assert f"{tmp_path}/winning-post-" in run.stderr and "unusable" in run.stderr
    assert f"manage.py genparams --force --kind winning-post --scale 1 --params-dir {tmp_path}" in run.stderr
    missing = subprocess.run([sys.executable, "manage.py", "verifyproof", str(bundle_file), "--params-dir",
                              str(tmp_path / "empty")], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 3 and ".params: missing" in missing.stderr, missing.stderr
    assert not (tmp_path / "empty").exists()  # a verifier never makes a setup


def test_proveonce_refuses_a_bad_job_id_with_the_rule_sets_message(tmp_path, params_dir):
    with pytest.raises(CommandError, match=r"^job_id may contain only letters"):
        call_command("proveonce", "--kind", "winning-post", "--job-id", "bad id", "--out", str(tmp_path / "b.json"),
                     "--params-dir", str(params_dir), stdout=StringIO())
    with pytest.raises(CommandError, match=r"^unknown proof kind 'nope'; valid kinds: porep-c2"):
        call_command("proveonce", "--kind", "nope", "--out", str(tmp_path / "b.json"), stdout=StringIO())
