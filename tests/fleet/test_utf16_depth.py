"""The depth guard reads the same text the parser reads: a status document must be UTF-8, so a
UTF-16 body (which `json.loads` accepts) cannot hide its brackets from the byte-level depth count.

The hiding trick: in UTF-16 a character such as U+0122 is the bytes 0x22 0x01, an odd quote to a
byte scanner, which then takes every bracket after it for string content; the parser then recursed
200,000 levels deep, and in a process whose recursion limit was raised that overflows the stack."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from statuspanel.fleet.poller import decode
from statuspanel.fleet.shape import Malformed, nesting_depth

ROOT = Path(__file__).resolve().parents[2]
LEVELS = 200_000
HIDING_TEXT = '["\u0122", ' + "[" * LEVELS + "]" * LEVELS + "]"

DECODE_IN_A_THREAD = """
import os, sys, threading
sys.path.insert(0, {root!r})
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vastmanager.settings")
import django; django.setup()
from statuspanel.fleet.poller import decode
from statuspanel.fleet.shape import Malformed
body = open({path!r}, "rb").read()
sys.setrecursionlimit(1_000_000)
def poll():
    try:
        decode(body, "cuzk")
        print("decoded")
    except Malformed as exc:
        print("malformed", exc.reason, exc)
thread = threading.Thread(target=poll)
thread.start(); thread.join()
"""


def test_utf16_hides_brackets_from_a_byte_scanner() -> None:
    body = HIDING_TEXT.encode("utf-16-le")
    assert nesting_depth(body) < 5 < LEVELS  # what the guard saw when it measured raw bytes
    assert json.detect_encoding(body) == "utf-16-le"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16", "utf-32"])
def test_a_deep_utf16_body_is_refused_without_harm_where_the_recursion_limit_is_raised(encoding, tmp_path) -> None:
    path = tmp_path / "body.json"
    path.write_bytes(HIDING_TEXT.encode(encoding))
    script = DECODE_IN_A_THREAD.format(root=str(ROOT), path=str(path))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, f"the decoding process died ({done.returncode}): {done.stderr[-500:]}"
    assert done.stdout.startswith("malformed not-json"), done.stdout
    assert "must be UTF-8" in done.stdout


def test_a_shallow_utf16_document_is_not_json_and_utf8_with_a_bom_is_read() -> None:
    doc = json.dumps({"gpu_workers": [], "pipelines": []})
    with pytest.raises(Malformed) as refused:
        decode(doc.encode("utf-16"), "cuzk")
    assert refused.value.reason == "not-json" and "UTF-16/32" in str(refused.value)
    assert decode(b"\xef\xbb\xbf" + doc.encode(), "cuzk")["gpu_workers"] == []
    with pytest.raises(Malformed) as deep:
        decode(b"\xef\xbb\xbf" + b"[" * 100 + b"]" * 100, "cuzk")
    assert deep.value.reason == "too-deep"
