"""`exportproof` refuses what it cannot export, with a message and a non-zero exit."""
from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from gpu_engine import queue
from tests.circom.registered import post_job, register

pytestmark = pytest.mark.django_db


def test_refusals(client, multiplier_circuit, settings, tmp_path, api_token):
    settings.CIRCUITS_DIR = tmp_path / "circuits"
    register(multiplier_circuit, "mult")
    out = str(tmp_path / "out")
    with pytest.raises(CommandError, match="no job with id 'nope'"):
        call_command("exportproof", "nope", "--out", out)
    queue.submit_job("porep-c2", "builtin")
    with pytest.raises(CommandError, match="only circuit jobs export"):
        call_command("exportproof", "builtin", "--out", out)
    post_job(client, {"proof_kind": "mult", "job_id": "queued", "inputs": [{"a": "1", "b": "2"}]})
    with pytest.raises(CommandError, match="is queued; its proofs exist once it is done"):
        call_command("exportproof", "queued", "--out", out)
    (tmp_path / "file").write_text("x")
    with pytest.raises(CommandError, match="is queued"):
        call_command("exportproof", "queued", "--out", str(tmp_path / "file"))
