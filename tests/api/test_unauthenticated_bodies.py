"""A path with a larger body limit (job submission: circuit batches) grants it only to the operator's
token: an unauthenticated request is held to the default limit and refused when its headers end,
before one body byte is read, so a flood of large unauthenticated posts costs the server nothing."""
from __future__ import annotations

import json
import threading

import pytest
from channels.testing import HttpCommunicator

from tests.api.conftest import SERVER_BODY_LIMIT
from tests.api.test_body_limits import _connect, _head, _read_response
from tests.credentials import TOKEN
from vastmanager import limits

FLOOD_POSTS = 24
FLOOD_BYTES = 60 * 2**20
# What the server may grow by under the flood: its own noise, nowhere near one flooded body.
RSS_ALLOWANCE = 48 * 2**20


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_unauthenticated_large_declared_body_is_refused_from_its_headers(panel_server):
    sock = _connect(panel_server, timeout=5)
    sock.sendall(_head("/api/jobs", f"Content-Length: {8 * 2**20}\r\n"))  # and not one byte of the body
    status, body = _read_response(sock)
    sock.close()
    assert status == 413 and body["limit"] == SERVER_BODY_LIMIT


def test_a_wrong_token_is_no_better_than_none(panel_server):
    sock = _connect(panel_server, timeout=5)
    sock.sendall(_head("/api/jobs", f"Content-Length: {8 * 2**20}\r\nAuthorization: Bearer {'x' * 32}\r\n"))
    status, body = _read_response(sock)
    sock.close()
    assert status == 413 and body["limit"] == SERVER_BODY_LIMIT


def test_the_operator_token_keeps_the_circuit_limit(panel_server):
    sock = _connect(panel_server, timeout=10)
    payload = b"[" + b" " * (2 * SERVER_BODY_LIMIT) + b"]"  # over the default, under the circuit limit
    sock.sendall(_head("/api/jobs", f"Content-Length: {len(payload)}\r\nAuthorization: Bearer {TOKEN}\r\n") + payload)
    status, body = _read_response(sock)
    sock.close()
    assert status == 400, body  # the view read it and said what is wrong with it


def test_unauthenticated_flood_does_not_grow_the_server(panel_server, capsys):
    pid = panel_server.proc.pid
    before = _rss(pid)
    accepted = [0] * FLOOD_POSTS

    def push(i: int) -> None:
        sock = _connect(panel_server, timeout=30)
        sock.sendall(_head("/api/jobs", f"Content-Length: {FLOOD_BYTES}\r\n"))
        block = b"x" * (1 << 20)
        try:
            while accepted[i] < FLOOD_BYTES:
                sock.sendall(block)
                accepted[i] += len(block)
        except OSError:
            pass  # answered 413 and cut off
        finally:
            sock.close()

    threads = [threading.Thread(target=push, args=(i,), daemon=True) for i in range(FLOOD_POSTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    grown = _rss(pid) - before
    with capsys.disabled():
        print(f"\n{FLOOD_POSTS} unauthenticated {FLOOD_BYTES >> 20} MiB posts: server RSS +{grown / 2**20:.1f} MiB, "
              f"{sum(accepted) / 2**20:.0f} MiB pushed before the cut-off")
    assert grown < RSS_ALLOWANCE
    assert all(n < FLOOD_BYTES for n in accepted)


# -- the same rule in the application's guard (any ASGI server) -----------------------------------------
def _app():
    from vastmanager.asgi import build_application

    return build_application()


@pytest.mark.asyncio
async def test_application_holds_unauthenticated_requests_to_the_default_limit(settings):
    settings.MAX_REQUEST_BYTES = 1000
    settings.CIRCUIT_MAX_BODY = 100_000
    comm = HttpCommunicator(_app(), "POST", "/api/jobs", body=b"", headers=[(b"content-length", b"5000")])
    response = await comm.get_response()
    assert response["status"] == 413 and json.loads(response["body"])["limit"] == 1000


def test_request_limit_follows_the_token(settings):
    settings.MAX_REQUEST_BYTES = 1000
    settings.CIRCUIT_MAX_BODY = 100_000
    assert limits.request_limit("/api/jobs", []) == 1000
    assert limits.request_limit("/api/jobs", [(b"Authorization", b"Bearer nope-nope-nope-nope")]) == 1000
    assert limits.request_limit("/api/jobs", [(b"authorization", f"Bearer {TOKEN}".encode())]) == 100_000
    assert limits.request_limit("/healthz", [(b"authorization", f"Bearer {TOKEN}".encode())]) == 1000
