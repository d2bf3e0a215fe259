"""Generated bad flag values and files for the management commands: a one-line error, never a traceback.

In-process (`call_command`) a refusal is a CommandError whose message is one line; anything else
escaping is the traceback an operator would see. Where the exit status is the interface
(verifyproof's 0/1/2, runprover's post-parse checks) real processes are run.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.management.commands.runprover import Command as RunProver
from gpu_engine.models import ProofJob
from gpu_engine.wire import validate_engine_id
from tests.runprover.helpers import ROOT, Site

FUZZ = settings(max_examples=100, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FEW = settings(FUZZ, max_examples=30)
DOCUMENTED_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}")

# What a shell can pass: no NUL; and no line breaks, so a message quoting a value stays on one line.
arg_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=30)
not_an_int = arg_text.filter(lambda s: not re.fullmatch(r"\s*[+-]?\d+(_\d+)*\s*", s))
int_text = st.integers(-(10**6), 10**6).map(str) | st.integers(10**30, 10**40).map(str) | st.just("9" * 5000)


def run(name: str, *args: str) -> tuple[int, str]:
    """(exit status, message): 0 and stdout on success, CommandError's returncode and one-line message."""
    out, err = StringIO(), StringIO()
    try:
        call_command(name, *args, stdout=out, stderr=err)
    except CommandError as exc:
        message = str(exc)
        assert message.strip() and "\n" not in message.strip(), message
        assert "Traceback" not in message
        return exc.returncode, message
    return 0, out.getvalue()


def run_process(site: Site, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=site.env, capture_output=True,
                            text=True, timeout=timeout)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def assert_one_line_failure(result: subprocess.CompletedProcess, code: int | None = None) -> None:
    assert result.returncode != 0 if code is None else result.returncode == code, (result.returncode, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and ("Error" in lines[-1] or "error:" in lines[-1]), result.stderr
    if not lines[-1].startswith("manage.py"):  # argparse adds its usage lines; a CommandError is one line
        assert len(lines) == 1, result.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return Site(tmp_path_factory.mktemp("fuzz-cmd"), tmp_path_factory.mktemp("fuzz-cmd-params"))


@pytest.fixture(scope="module")
def bundle_text(tmp_path_factory, params_dir) -> str:
    out = tmp_path_factory.mktemp("fuzz-bundle") / "wp.json"
    code, _ = run("proveonce", "--kind", "winning-post", "--job-id", "fuzz-wp-1", "--out", str(out),
                  "--params-dir", str(params_dir))
    assert code == 0
    return out.read_text()


# ---- submitproof ----------------------------------------------------------------------------------

def _submit_ok(kind: str, count: str, job_id: str | None, priority: str | None) -> bool:
    if kind not in PROOF_KINDS or not re.fullmatch(r"[+-]?\d+", count.strip()) or len(count) > 4000:
        return False
    n = int(count)
    if not 1 <= n <= 100_000:
        return False
    if job_id is not None:
        ids = [job_id] if n == 1 else [f"{job_id}-{i}" for i in range(1, n + 1)]
        if not all(DOCUMENTED_ID.fullmatch(i) for i in ids):
            return False
    if priority is not None:
        if not re.fullmatch(r"[+-]?\d+", priority.strip()) or len(priority) > 4000:
            return False
        if not -1000 <= int(priority) <= 1000:
            return False
    return True


@pytest.mark.django_db
@FUZZ
@given(kind=st.sampled_from(sorted(PROOF_KINDS)) | arg_text,
       count=(st.integers(-3, 3) | st.integers(9, 12)).map(str) | st.integers(100_001, 10**40).map(str) | not_an_int,
       job_id=st.none() | st.from_regex(DOCUMENTED_ID, fullmatch=True) | arg_text
       | st.integers(124, 127).map(lambda n: "x" * n),
       priority=st.none() | st.integers(-1500, 1500).map(str) | not_an_int | st.just("9" * 5000))
def test_submitproof_bad_values_store_nothing(kind, count, job_id, priority):
    args = ["--kind", kind, "--count", count]
    args += [] if job_id is None else ["--job-id", job_id]
    args += [] if priority is None else ["--priority", priority]
    before = set(ProofJob.objects.values_list("job_id", flat=True))
    code, message = run("submitproof", *args)
    after = set(ProofJob.objects.values_list("job_id", flat=True))
    if _submit_ok(kind, count, job_id, priority):
        assert code == 0 or "already exists with proof kind" in message, message
    else:
        assert code != 0, (args, message)
        assert after == before, f"a refused submission stored {sorted(after - before)}"


@pytest.mark.django_db
@settings(FUZZ, max_examples=40)
@given(length=st.integers(110, 128), count=st.integers(1, 12))
def test_submitproof_batch_is_validated_before_any_is_stored(length, count):
    base = "b" * length
    before = ProofJob.objects.count()
    code, message = run("submitproof", "--kind", "window-post", "--count", str(count), "--job-id", base)
    longest = length if count == 1 else length + 1 + len(str(count))
    if longest <= 128:
        assert code == 0, message
    else:
        assert code == 1 and "limit is 128" in message
        assert ProofJob.objects.count() == before, "a refused batch stored some of its jobs"


def test_submitproof_batch_with_one_overlong_id_stores_none(site):
    # 126 characters: ids ID-1..ID-9 fit the 128 limit, ID-10 does not.
    result = run_process(site, "submitproof", "--kind", "window-post", "--count", "10", "--job-id", "b" * 126)
    assert_one_line_failure(result, 1)
    assert "limit is 128" in result.stderr
    assert site.query("SELECT count(*) FROM gpu_engine_proofjob WHERE job_id LIKE 'bbbb%'") == [(0,)]


# ---- verifyproof ----------------------------------------------------------------------------------

@FUZZ
@given(raw=st.binary(max_size=300))
def test_verifyproof_random_bytes_is_malformed(tmp_path, raw):
    path = tmp_path / "random.json"
    path.write_bytes(raw)
    code, message = run("verifyproof", str(path))  # refused before any key is needed
    assert code == 2 and "malformed" in message


@FUZZ
@given(data=st.data())
def test_verifyproof_truncated_bundle_is_malformed(tmp_path, bundle_text, data):
    cut = data.draw(st.integers(0, len(bundle_text) - 1))
    path = tmp_path / "truncated.json"
    path.write_text(bundle_text[:cut])
    code, message = run("verifyproof", str(path))
    assert code == 2 and "malformed" in message


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*prefix, i))


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
                           | st.integers(0, 10**80).map(str),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                       max_size=3), max_leaves=8)


@FUZZ
@given(data=st.data(), action=st.sampled_from(["replace", "delete"]))
def test_verifyproof_mutated_bundle_is_refused_not_crashed(tmp_path, params_dir, bundle_text, data, action):
    bundle = json.loads(bundle_text)
    path = data.draw(st.sampled_from([p for p in _paths(bundle) if p]))
    parent = bundle
    for key in path[:-1]:
        parent = parent[key]
    original = parent[path[-1]]
    if action == "delete":
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(json_values)
        assume(parent[path[-1]] != original)
    file = tmp_path / "mutated.json"
    file.write_text(json.dumps(bundle))
    code, message = run("verifyproof", str(file), "--params-dir", str(params_dir))
    if path == ("vk_fingerprint",) and action == "delete":  # the one optional field (bundles made before it)
        assert code == 0, message
    else:
        assert code in (1, 2), (path, action, message)  # a changed bundle never verifies, and never crashes


@FEW
@given(data=st.data())
def test_verifyproof_flipped_byte_never_crashes(tmp_path, params_dir, bundle_text, data):
    raw = bytearray(bundle_text.encode())
    at = data.draw(st.integers(0, len(raw) - 1))
    raw[at] = data.draw(st.integers(0, 255).filter(lambda b: b != raw[at]))
    file = tmp_path / "flipped.json"
    file.write_bytes(bytes(raw))
    code, _ = run("verifyproof", str(file), "--params-dir", str(params_dir))
    allowed = {0, 1, 2}  # 0 only where the byte was insignificant whitespace
    try:
        flipped = json.loads(bytes(raw))
    except (ValueError, RecursionError):
        flipped = None
    if isinstance(flipped, dict) and flipped.get("proof_kind") not in PROOF_KINDS:
        allowed.add(3)  # a kind this host does not know (a circuit not registered here): no trusted key
    assert code in allowed


@pytest.mark.parametrize("content, code", [
    ("[" * 100_000 + "]" * 100_000, 2),
    ("9" * 10_000, 2),
    (b"\xff\xfe\x00garbage", 2),
    ('{"proof_kind": "winning-post"}', 2),
    (None, 2),  # no such file
])
def test_verifyproof_exit_status_of_garbage(site, tmp_path, content, code):
    path = tmp_path / "garbage.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert_one_line_failure(run_process(site, "verifyproof", str(path)), code)


def test_verifyproof_exit_status_of_a_wrong_proof(site, tmp_path, params_dir, bundle_text):
    bundle = json.loads(bundle_text)
    bundle["partitions"][0]["public_inputs"][0] = "1"
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(bundle))
    assert_one_line_failure(run_process(site, "verifyproof", str(path), "--params-dir", str(params_dir)), 1)


# ---- proveonce and genparams ----------------------------------------------------------------------

bad_scale = st.integers(-(10**6), 0).map(str) | not_an_int


def _bad_place(tmp: Path, choice: str) -> str:
    blocker = tmp / "a-file"
    blocker.write_text("not a directory")
    return {"file": str(blocker), "under-file": str(blocker / "sub"), "proc": "/proc/vastmanager-nope",
            "empty": "", "dir": str(tmp), "missing-parent": str(tmp / "no" / "such" / "b.json")}[choice]


@pytest.mark.django_db  # a parameter directory without parameters: have proofs of the kind been issued?
@FEW
@given(which=st.sampled_from(["kind", "scale", "out", "params-dir"]), kind=arg_text.filter(lambda k: k not in PROOF_KINDS),
       scale=bad_scale, place=st.sampled_from(["file", "under-file", "proc", "empty", "dir", "missing-parent"]))
def test_proveonce_bad_flag_fails_before_proving(tmp_path, params_dir, which, kind, scale, place):
    out = tmp_path / "out.json"
    args = {"--kind": "winning-post", "--out": str(out), "--params-dir": str(params_dir)}
    if which == "kind":
        args["--kind"] = kind
    elif which == "scale":
        args["--scale"] = scale
    elif which == "out":
        assume(place not in ("file",))  # an existing file is a fine place to write a bundle
        args["--out"] = _bad_place(tmp_path, place)
    else:
        assume(place not in ("dir", "empty", "missing-parent"))  # those are creatable directories
        args["--params-dir"] = _bad_place(tmp_path, place)
    code, message = run("proveonce", *[x for pair in args.items() for x in pair])
    assert code != 0, message
    assert not out.exists() and not list(tmp_path.glob("*.tmp"))


@pytest.mark.django_db
@FEW
@given(which=st.sampled_from(["kind", "scale", "params-dir"]), kind=arg_text.filter(lambda k: k not in PROOF_KINDS),
       scale=bad_scale, place=st.sampled_from(["file", "under-file", "proc"]))
def test_genparams_bad_flag_is_refused(tmp_path, params_dir, which, kind, scale, place):
    args = {"--kind": "winning-post", "--params-dir": str(params_dir)}
    if which == "kind":
        args["--kind"] = kind
    elif which == "scale":
        args["--scale"] = scale
    else:
        args["--params-dir"] = _bad_place(tmp_path, place)
    code, message = run("genparams", *[x for pair in args.items() for x in pair])
    assert code != 0, message


@pytest.mark.parametrize("args", [
    ["genparams", "--params-dir", "/proc/vastmanager-nope"],
    ["genparams", "--scale", "0"],
    ["proveonce", "--kind", "winning-post", "--out", ""],
    ["proveonce", "--kind", "winning-post", "--out", "/proc/no/such/dir/b.json"],
    ["proveonce", "--kind", "porep", "--out", "x.json"],
    ["submitproof", "--kind", "window-post", "--job-id", "trailing-newline\n"],
])
def test_commands_exit_non_zero_with_one_line(site, args):
    assert_one_line_failure(run_process(site, *args))


# ---- runprover ------------------------------------------------------------------------------------

def _parse_runprover(*argv: str):
    return RunProver().create_parser("manage.py", "runprover").parse_args(list(argv))


@pytest.mark.parametrize("flag", ["--bind", "--workers", "--gpus", "--backend", "--synth-workers", "--finalizers",
                                  "--proving-processes", "--memory-budget", "--drain-secs"])
@settings(FUZZ, max_examples=60)
@given(value=arg_text | int_text | st.integers(10**300, 10**320).map(lambda n: f"{n}.5GiB")
       | st.sampled_from(["nan", "inf", "-inf", "1e400", "0,,1", "-1", "[::1]:80", ":80", "0x10", "1_000"]))
def test_runprover_flag_values_parse_or_are_refused(flag, value):
    try:
        opts = _parse_runprover(flag, value)
    except CommandError as exc:
        assert str(exc).startswith("Error: argument") and "\n" not in str(exc)
        return
    parsed = vars(opts)[flag[2:].replace("-", "_")]
    if flag == "--bind":
        host, port = parsed
        assert host and 0 <= port <= 65535
    elif flag in ("--workers", "--synth-workers", "--finalizers"):
        assert isinstance(parsed, int) and parsed >= 1
    elif flag == "--proving-processes":
        assert isinstance(parsed, int) and parsed >= 0
    elif flag == "--memory-budget":
        assert isinstance(parsed, int) and parsed > 0
    elif flag == "--gpus":
        assert parsed in ("auto", "none") or (parsed and all(o >= 0 for o in parsed) and len(set(parsed)) == len(parsed))
    elif flag == "--backend":
        assert parsed in ("auto", "cpu", "cuda")
    elif flag == "--drain-secs":
        assert isinstance(parsed, float)  # range checked after parsing: see the process test below


@FUZZ
@given(engine_id=arg_text | st.text(max_size=200))
def test_engine_id_is_accepted_only_printable_and_bounded(engine_id):
    try:
        validate_engine_id(engine_id)
    except ValueError as exc:
        assert str(exc)
        return
    assert 0 < len(engine_id) <= 128 and not any(c.isspace() or not c.isprintable() for c in engine_id)


@pytest.mark.parametrize("args, message", [
    (["--drain-secs", "nan"], "--drain-secs must be between 0 and"),
    (["--drain-secs", "inf"], "--drain-secs must be between 0 and"),
    (["--drain-secs", "-1"], "--drain-secs must be between 0 and"),
    (["--memory-budget", "9" * 320 + ".5"], "is too large"),
    (["--engine-id", "tab\there"], "without spaces"),
])
def test_runprover_post_parse_checks_exit_with_a_message(site, args, message):
    result = run_process(site, "runprover", "--no-serve", "--backend", "cpu", *args, timeout=90)
    assert_one_line_failure(result)
    assert message in result.stderr, result.stderr

