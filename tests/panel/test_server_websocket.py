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
    resync = masked_text_frame('{"type": "resync"}')  # each asks for every engine's frame again: fills buffers
    deadline = time.monotonic() + 40  # well before Daphne's own ping timeout (about 50 s) would cut it
    try:
        while server_holds(pid, sock):
            assert time.monotonic() < deadline, "the server still holds a client that has not read for 40 s"
            try:
                sock.sendall(resync * 20)
            except OSError:
                break  # cut off by the server
            time.sleep(0.1)
    finally:
        sock.close()
    assert "dropping slow WebSocket client" in demo.log()


def test_clients_leaving_mid_broadcast_log_no_tracebacks(demo):
    """Clients that are behind (their buffers full) say goodbye and go: the server's close handshake
    waits on a buffer that will not drain while broadcasts keep coming; others just reset."""
    goodbye = b"\x88\x82" + b"\x00\x00\x00\x00" + struct.pack("!H", 1001)  # a masked close frame, 1001
    resync = masked_text_frame('{"type": "resync"}')
    behind = []
    for _ in range(5):
        sock, head = handshake(demo.port, f"token={TOKEN}")
        assert head.startswith(b"HTTP/1.1 101"), head
        behind.append(sock)
    for _ in range(20):  # fill their buffers (each resync asks for every engine's frame again)
        for sock in behind:
            sock.sendall(resync * 20)
        time.sleep(0.1)
    for sock in behind:
        sock.sendall(goodbye)
    resets = []
    for _ in range(10):
        sock, head = handshake(demo.port, f"token={TOKEN}", rcvbuf=1 << 16)
        assert head.startswith(b"HTTP/1.1 101"), head
        resets.append(sock)
    time.sleep(1.0)
    for sock in resets:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # gone without a word
        sock.close()
    time.sleep(4)  # broadcasts go on; Daphne reports a failed consumer within a second
    for sock in behind:
        sock.close()
    _no_tracebacks(demo)
