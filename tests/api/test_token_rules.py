"""Tokens: at least 16 characters (a system check stops every command, runprover included, and a
weak configured token admits nobody); one from the environment is never printed."""
from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from statuspanel import auth
from statuspanel.checks import check_tokens
from tests.credentials import TOKEN


@pytest.mark.parametrize("weak", ["x", "fifteen-chars-x", "sixteen chars ok"])
def test_short_or_spaced_token_fails_the_system_check(settings, weak):
    settings.VASTMANAGER_TOKEN = weak
    errors = check_tokens()
    assert [e.id for e in errors] == ["vastmanager.E001"]
    assert "VASTMANAGER_TOKEN" in errors[0].msg
    with pytest.raises(SystemCheckError, match="vastmanager.E001"):
        call_command("check")


def test_weak_token_admits_nobody(settings):
    settings.VASTMANAGER_TOKEN = "x"
    assert not auth.token_is_valid("x")


def test_sixteen_characters_pass(settings):
    settings.VASTMANAGER_TOKEN = "0123456789abcdef"
    assert check_tokens() == [] and auth.token_is_valid("0123456789abcdef")


def test_short_token_file_fails_the_check(settings, tmp_path):
    settings.VASTMANAGER_TOKEN = ""
    settings.DATA_DIR = tmp_path
    (tmp_path / auth.TOKEN_FILE).write_text("short\n")
    assert [e.id for e in check_tokens()] == ["vastmanager.E001"]


def test_check_generates_no_token_file(settings, tmp_path):
    settings.VASTMANAGER_TOKEN = ""
    settings.DATA_DIR = tmp_path
    assert check_tokens() == [] and not (tmp_path / auth.TOKEN_FILE).exists()


def test_token_from_the_environment_is_not_printed(settings):
    settings.VASTMANAGER_TOKEN = TOKEN
    lines = "\n".join(auth.token_banner_lines("http://127.0.0.1:8000"))
    assert TOKEN not in lines
    assert "from the environment (VASTMANAGER_TOKEN)" in lines
    assert "http://127.0.0.1:8000/login?token=<VASTMANAGER_TOKEN>" in lines


def test_generated_token_banner_says_where_it_is_kept(settings, tmp_path):
    settings.VASTMANAGER_TOKEN = ""
    settings.DATA_DIR = tmp_path
    lines = "\n".join(auth.token_banner_lines("http://127.0.0.1:8000"))
    assert f"kept in {tmp_path / auth.TOKEN_FILE}" in lines
    assert f"/login?token={auth.api_token()}" in lines


def test_servepanel_refuses_to_start_with_a_short_token(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "VASTMANAGER_DATA_DIR": str(tmp_path), "VASTMANAGER_TOKEN": "x",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run([sys.executable, "manage.py", "servepanel", "--bind", "127.0.0.1:1"], cwd=root, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "vastmanager.E001" in result.stderr and "at least 16" in result.stderr


def test_live_server_banner_does_not_print_the_token(panel_server):
    log = panel_server.log()
    assert "from the environment (VASTMANAGER_TOKEN)" in log
    assert TOKEN not in log
