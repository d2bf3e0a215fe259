"""Request bodies over the path's limit are refused from Content-Length before the body is read
(413 JSON), chunked bodies are cut off at the limit, and /healthz keeps answering meanwhile: against
the real server over raw sockets, and the same answer from the application under any server."""
from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from channels.testing import HttpCommunicator

from tests.api.conftest import SERVER_BODY_LIMIT
from tests.credentials import TOKEN
from vastmanager import limits

DECLARED = 300 * 2**20
# A POST path held to the default limit (job submission has a larger one: circuit batches).
CANCEL = "/api/jobs/some-job/cancel"


def _connect(site, timeout: float = 10) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", site.port), timeout=timeout)
    return sock


def _read_response(sock: socket.socket) -> tuple[int, dict]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(head.split(b" ")[1]), json.loads(body)


def _head(path: str, extra: str) -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{extra}\r\n".encode()


def test_declared_300mb_post_is_refused_before_any_body(panel_server):
    sock = _connect(panel_server, timeout=5)
    sock.sendall(_head("/healthz", f"Content-Length: {DECLARED}\r\n"))  # and not one byte of the body
    status, body = _read_response(sock)
    sock.close()
    assert status == 413
    assert body["limit"] == SERVER_BODY_LIMIT and str(DECLARED) in body["error"]
    # The server looked the limit up by the request's own path (the refusal is logged with it).
    assert f"refused a request body over {SERVER_BODY_LIMIT} bytes for /healthz" in panel_server.log()


def test_expect_continue_gets_413_instead_of_100(panel_server):
    sock = _connect(panel_server, timeout=5)
    sock.sendall(_head("/api/jobs", f"Content-Length: {DECLARED}\r\nExpect: 100-continue\r\n"))
    first = sock.recv(12)
    sock.close()
    assert first == b"HTTP/1.1 413"


def test_chunked_body_is_cut_off_at_the_limit(panel_server):
    sock = _connect(panel_server, timeout=5)
    sock.sendall(_head(CANCEL, "Transfer-Encoding: chunked\r\n"))
    chunk = b"x" * 4096
    for _ in range(SERVER_BODY_LIMIT // len(chunk) + 1):
        sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    status, body = _read_response(sock)  # answered without the body ever ending
    sock.close()
    assert status == 413 and "over this path's limit" in body["error"]


def test_healthz_answers_while_a_huge_body_is_pushed(panel_server):
    sent = [0]

    def push() -> None:
        sock = _connect(panel_server)
        sock.sendall(_head("/healthz", f"Content-Length: {DECLARED}\r\n"))
        block = b"x" * (1 << 20)
        try:
            while sent[0] < DECLARED:
                sock.sendall(block)
                sent[0] += len(block)
        except OSError:
            pass  # the server answered and cut the connection
        finally:
            sock.close()

    pusher = threading.Thread(target=push, daemon=True)
    pusher.start()
    import urllib.request

    for _ in range(5):
        with urllib.request.urlopen(f"{panel_server.base}/healthz", timeout=10) as response:
            assert response.status == 200 and json.loads(response.read())["ok"] is True
        time.sleep(0.1)
    pusher.join(30)
    assert not pusher.is_alive()
    # Cut off after the linger allowance plus what the kernel buffers held: nowhere near 300 MB.
    assert sent[0] < 64 * 2**20, f"{sent[0]} bytes were accepted of a body refused from its header"
    assert "Traceback" not in panel_server.log()


def test_body_within_the_limit_reaches_the_api(panel_server):
    import urllib.request

    request = urllib.request.Request(f"{panel_server.base}/api/jobs", method="POST",
                                     data=json.dumps({"proof_kind": "window-post"}).encode(),
                                     headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201


# -- the application's own guard (any ASGI server) ----------------------------------------------------
def _app():
    from vastmanager.asgi import build_application

    return build_application()


@pytest.mark.asyncio
async def test_application_refuses_a_declared_length_over_the_limit(settings):
    settings.MAX_REQUEST_BYTES = 1000
    comm = HttpCommunicator(_app(), "POST", "/healthz", body=b"", headers=[(b"content-length", b"5000")])
    response = await comm.get_response()
    assert response["status"] == 413 and json.loads(response["body"])["limit"] == 1000


@pytest.mark.asyncio
async def test_application_cuts_off_an_undeclared_body(settings):
    settings.MAX_REQUEST_BYTES = 1000
    comm = HttpCommunicator(_app(), "POST", CANCEL, body=b"x" * 1001)
    response = await comm.get_response()
    assert response["status"] == 413


def test_limit_is_looked_up_by_path(settings, monkeypatch):
    settings.MAX_REQUEST_BYTES = 1000
    monkeypatch.setattr(limits, "path_limits", lambda: {"/api/jobs": 5000})
    assert limits.limit_for("/api/jobs") == 5000
    assert limits.limit_for("/api/jobs?x=1") == 5000
    assert limits.limit_for("http://127.0.0.1:8000/api/jobs") == 5000
    assert limits.limit_for("/api/jobs/x/cancel") == 1000
    assert limits.limit_for("/healthz") == 1000


def test_path_limit_over_djangos_own_is_a_check_error(settings, monkeypatch):
    from statuspanel.checks import check_body_limits

    assert check_body_limits() == []
    monkeypatch.setattr(limits, "path_limits", lambda: {"/api/jobs": settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1})
    assert [e.id for e in check_body_limits()] == ["vastmanager.E003"]
