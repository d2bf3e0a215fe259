"""The WebSocket through the real server (runprover --demo: Daphne, engine proving, frames flowing),
spoken to over raw sockets: origin port check, the close code of an oversized message, slow clients
dropped, and clients leaving mid-broadcast without tracebacks in the log."""
from __future__ import annotations

import socket
import struct
import time

import pytest

from tests.credentials import TOKEN
from tests.panel.wsclients import handshake, masked_text_frame, read_frames_until_close, server_holds
from tests.process_support import ServedSite

SLOW_SECS = 3

pytestmark = pytest.mark.slow  # a real server and frames filling kernel buffers: tens of seconds


@pytest.fixture(scope="module")
def demo(tmp_path_factory, params_dir) -> ServedSite:
    site = ServedSite(tmp_path_factory.mktemp("ws-server"), TOKEN, VASTMANAGER_PARAMS_DIR=str(params_dir),
                      WS_SLOW_CLIENT_SECS=str(SLOW_SECS))
    site.start("runprover", "--demo", "--backend", "cpu", "--synth-workers", "1")
    yield site
    site.stop()


def _no_tracebacks(site: ServedSite) -> None:
    log = site.log()
    assert "Traceback" not in log and "Exception inside application" not in log, log[-4000:]


def test_origin_on_another_port_is_refused(demo):
    sock, head = handshake(demo.port, f"token={TOKEN}", origin=f"http://127.0.0.1:{demo.port + 1}")
    sock.close()
    assert head.startswith(b"HTTP/1.1 403"), head
    sock, head = handshake(demo.port, f"token={TOKEN}")
    sock.close()
    assert head.startswith(b"HTTP/1.1 101"), head


def test_oversized_message_closes_4009_with_the_reason(demo):
    from statuspanel.consumers import MAX_CLIENT_MESSAGE

    sock, head = handshake(demo.port, f"token={TOKEN}&format=json", rcvbuf=1 << 20)
    assert head.startswith(b"HTTP/1.1 101"), head
    sock.sendall(masked_text_frame("x" * (MAX_CLIENT_MESSAGE + 1)))
    _frames, close = read_frames_until_close(sock)
    sock.close()
    assert close is not None and close[0] == 4009, close
    assert str(MAX_CLIENT_MESSAGE) in close[1]
    time.sleep(1)
    _no_tracebacks(demo)


def test_client_that_never_reads_is_dropped(demo):
    sock, head = handshake(demo.port, f"token={TOKEN}")  # html frames, a 4 KiB receive buffer, never read
    assert head.startswith(b"HTTP/1.1 101"), head
    pid = demo.proc.pid
    deadline = time.monotonic() + 60  # Daphne's own ping timeout would take about 50 s
    try:
        while server_holds(pid, sock):
            assert time.monotonic() < deadline, "the server still holds a client that has not read for 60 s"
            time.sleep(0.5)
    finally:
        sock.close()
    assert "dropping slow WebSocket client" in demo.log()


def test_clients_leaving_mid_broadcast_log_no_tracebacks(demo):
    for _round in range(3):
        clients = []
        for _ in range(20):
            sock, head = handshake(demo.port, f"token={TOKEN}", rcvbuf=1 << 16)
            assert head.startswith(b"HTTP/1.1 101"), head
            clients.append(sock)
        time.sleep(1.0)  # frames on their way to every client
        for i, sock in enumerate(clients):
            if i % 2:
                sock.sendall(b"\x88\x82" + b"\x00\x00\x00\x00" + struct.pack("!H", 1001))  # a close, then gone
            else:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset
            sock.close()
        time.sleep(0.5)
    time.sleep(3)  # Daphne's application checker reports failed consumers once a second
    _no_tracebacks(demo)
