"""addsource / listsources / removesource: one rule set with the admin (the form), clear errors and a
non-zero exit on bad input, nothing saved then; tokens never printed."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from statuspanel.models import Source

pytestmark = pytest.mark.django_db

TOKEN = "fleet-status-token-0123456789"


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_add_list_and_remove_an_http_source() -> None:
    assert "added source box1 (cuzk, http http://10.0.0.5:9820" in run("addsource", "box1", "--kind", "cuzk",
                                                                        "--url", "http://10.0.0.5:9820")
    source = Source.objects.get(name="box1")
    assert (source.transport, source.interval_secs, source.enabled, source.token) == ("http", 1.5, True, "")
    listing = run("listsources")
    assert "box1" in listing and "http://10.0.0.5:9820" in listing
    assert json.loads(run("listsources", "--json"))["sources"][0]["name"] == "box1"
    assert "removed box1" in run("removesource", "box1")
    assert not Source.objects.exists()


def test_an_ssh_source_and_its_target(tmp_path) -> None:
    key = tmp_path / "id_ed25519"
    key.write_text("not checked here, only that it is a readable file\n")
    run("addsource", "box2", "--kind", "cuzk", "--ssh", "root@gpu.example.net:2222", "--key", str(key),
        "--remote-port", "9820", "--interval", "3")
    source = Source.objects.get(name="box2")
    assert (source.ssh_user, source.ssh_host, source.ssh_port, source.remote_port) == ("root", "gpu.example.net",
                                                                                         2222, 9820)
    assert source.known_hosts_policy == "pin" and source.url == ""
    assert source.target() == "root@gpu.example.net:2222 -> 127.0.0.1:9820"


def test_the_token_is_stored_and_never_printed(tmp_path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    out = run("addsource", "eng1", "--kind", "vastmanager", "--url", "https://eng1.example.net",
              "--token-file", str(token_file))
    assert Source.objects.get(name="eng1").token == TOKEN
    assert TOKEN not in out
    listing = run("listsources") + run("listsources", "--json")
    assert TOKEN not in listing and "set" in listing


def test_replace_keeps_the_token_when_none_is_given_for_the_same_target() -> None:
    run("addsource", "eng1", "--kind", "vastmanager", "--url", "http://10.0.0.7:8000", "--token", TOKEN)
    run("addsource", "eng1", "--kind", "vastmanager", "--url", "http://10.0.0.7:8000", "--interval", "2", "--replace")
    source = Source.objects.get(name="eng1")
    assert (source.interval_secs, source.token) == (2.0, TOKEN)
    with pytest.raises(CommandError, match="give it again"):  # another host: the token is not sent there
        run("addsource", "eng1", "--kind", "vastmanager", "--url", "http://10.0.0.8:8000", "--replace")
    source.refresh_from_db()
    assert (source.url, source.token) == ("http://10.0.0.7:8000", TOKEN)


@pytest.mark.parametrize("args,message", [
    (["bad name", "--kind", "cuzk", "--url", "http://h:1"], "name"),
    (["box", "--kind", "cuzk", "--url", "ftp://h/status"], "http:// or https://"),
    (["box", "--kind", "cuzk", "--url", "http://user:pw@h:1"], "no credentials in the URL"),
    (["box", "--kind", "cuzk", "--url", "http://"], "no host"),
    (["box", "--kind", "cuzk", "--url", "http://h:99999"], "not a URL"),
    (["box", "--kind", "cuzk", "--url", "http://h:1", "--interval", "0"], "interval must be between"),
    (["box", "--kind", "cuzk", "--url", "http://h:1", "--interval", "nan"], "interval_secs: Enter a number"),
    (["box", "--kind", "cuzk", "--url", "http://h:1", "--token", "short"], "at least 16"),
    (["box", "--kind", "vastmanager", "--url", "http://h:1"], "needs a token"),
    (["box", "--kind", "cuzk", "--url", "http://h:1", "--remote-port", "9"], "go with --ssh"),
    (["box", "--kind", "cuzk", "--ssh", "nouser.example", "--key", "/etc/hostname", "--remote-port", "9"],
     "user@host"),
    (["box", "--kind", "cuzk", "--ssh", "u@h:0", "--key", "/etc/hostname", "--remote-port", "9"], "1 to 65535"),
    (["box", "--kind", "cuzk", "--ssh", "u@h", "--key", "/no/such/key", "--remote-port", "9"], "not a readable file"),
    (["box", "--kind", "cuzk", "--ssh", "u@h", "--key", "/etc/hostname"], "needs the status port"),
    (["box", "--kind", "cuzk", "--ssh", "u@h;rm", "--key", "/etc/hostname", "--remote-port", "9"], "ssh host"),
])
def test_bad_input_is_refused_with_a_message_and_nothing_saved(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("addsource", *args)
    assert not Source.objects.exists()


def test_a_duplicate_name_needs_replace() -> None:
    run("addsource", "box", "--kind", "cuzk", "--url", "http://h:1")
    with pytest.raises(CommandError, match="--replace"):
        call_command("addsource", "box", "--kind", "cuzk", "--url", "http://h:2")
    assert Source.objects.get(name="box").url == "http://h:1"


def test_removing_an_unknown_source_removes_nothing() -> None:
    run("addsource", "box", "--kind", "cuzk", "--url", "http://h:1")
    with pytest.raises(CommandError, match="no source named 'nope'"):
        call_command("removesource", "box", "nope")
    assert Source.objects.filter(name="box").exists()


@pytest.mark.slow
def test_the_commands_exit_non_zero_from_the_shell(tmp_path) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, VASTMANAGER_DATA_DIR=str(tmp_path), PYTHONPATH=str(root))
    env.pop("DATABASE_URL", None)
    subprocess.run([sys.executable, str(root / "manage.py"), "migrate", "-v0"], env=env, check=True, timeout=120)
    done = subprocess.run([sys.executable, str(root / "manage.py"), "addsource", "x", "--kind", "cuzk", "--url",
                           "gopher://h"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "http:// or https://" in done.stderr


def test_a_source_cannot_take_the_name_of_an_engine_publishing_itself(clean_panel_cache) -> None:
    from django.core.cache import cache

    from gpu_engine import runtime, wire
    from tests.panel.helpers import busy_tracker

    wire.store_snapshot(cache, {"engine_id": "gpu-host-1", "seq": 1}, 2.0)
    with pytest.raises(CommandError, match="publishes itself"):
        call_command("addsource", "gpu-host-1", "--kind", "cuzk", "--url", "http://h:1")
    runtime.set_local_tracker(busy_tracker(), "this-engine")
    try:
        with pytest.raises(CommandError, match="publishes itself"):
            call_command("addsource", "this-engine", "--kind", "cuzk", "--url", "http://h:1")
    finally:
        runtime.set_local_tracker(None)
    assert not Source.objects.exists()
