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

SLOW_SECS = 8
MAX_BUFFERED = 4096

pytestmark = pytest.mark.slow  # a real server and frames filling kernel buffers: tens of seconds


@pytest.fixture(scope="module")
def demo(tmp_path_factory, params_dir) -> ServedSite:
    site = ServedSite(tmp_path_factory.mktemp("ws-server"), TOKEN, VASTMANAGER_PARAMS_DIR=str(params_dir),
                      WS_SLOW_CLIENT_SECS=str(SLOW_SECS), WS_MAX_BUFFERED_BYTES=str(MAX_BUFFERED))
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
    from statuspanel.stream.consumer import MAX_CLIENT_MESSAGE

    sock, head = handshake(demo.port, f"token={TOKEN}&format=json", rcvbuf=1 << 20)
    assert head.startswith(b"HTTP/1.1 101"), head
    sock.sendall(masked_text_frame("x" * (MAX_CLIENT_MESSAGE + 1)))
    _frames, close = read_frames_until_close(sock)
    sock.close()
    assert close is not None and close[0] == 4009, close
    assert str(MAX_CLIENT_MESSAGE) in close[1]
    time.sleep(1)
    _no_tracebacks(demo)


def _fill_until_dropped(site: ServedSite, sock: socket.socket, frame: bytes, limit: float = 40) -> None:
    """Send `frame` (20 at a time) without ever reading, until the server lets go of this client."""
    deadline = time.monotonic() + limit  # well before Daphne's own ping timeout (about 50 s) would cut it
    while server_holds(site.proc.pid, sock):
        assert time.monotonic() < deadline, f"the server still holds a client that has not read for {limit:.0f} s"
        try:
            sock.sendall(frame * 20)
        except OSError:
            return  # cut off by the server
        time.sleep(0.1)


def _drop_reasons(site: ServedSite, sock: socket.socket) -> list[str]:
    port = sock.getsockname()[1]
    return [line for line in site.log().splitlines() if "dropping slow WebSocket client" in line and f"{port}]" in line]


def test_client_that_stays_behind_is_dropped_after_the_time_bound(demo):
    sock, head = handshake(demo.port, f"token={TOKEN}")  # html frames, a 4 KiB receive buffer, never read
    assert head.startswith(b"HTTP/1.1 101"), head
    try:
        # Each resync asks for every engine's frame again: buffers fill, then the frames wait as one per engine.
        _fill_until_dropped(demo, sock, masked_text_frame('{"type": "resync"}'))
        reasons = _drop_reasons(demo, sock)
    finally:
        sock.close()
    assert len(reasons) == 1 and f"not reading for over {SLOW_SECS}s" in reasons[0], reasons


def test_client_written_past_the_byte_bound_is_dropped_at_once(demo):
    sock, head = handshake(demo.port, f"token={TOKEN}")
    assert head.startswith(b"HTTP/1.1 101"), head
    resync, ping = masked_text_frame('{"type": "resync"}'), masked_text_frame('{"type": "ping"}')
    try:
        _fill_until_dropped(demo, sock, resync + ping)  # pongs are written even while it is behind
        reasons = _drop_reasons(demo, sock)
    finally:
        sock.close()
    assert len(reasons) == 1 and f"more than {MAX_BUFFERED} bytes waiting" in reasons[0], reasons


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


def test_client_flooding_messages_is_dropped(demo):
    from vastmanager.server import MAX_QUEUED_BYTES

    sock, head = handshake(demo.port, f"token={TOKEN}&format=json", rcvbuf=1 << 20)
    assert head.startswith(b"HTTP/1.1 101"), head
    junk = masked_text_frame("x" * 60000)  # each answered with an error frame, one at a time
    try:
        sock.sendall(junk * (2 * MAX_QUEUED_BYTES // 60000))  # twice the bound, in one go
        _frames, close = read_frames_until_close(sock, timeout=20)
    finally:
        sock.close()
    assert close is not None and close[0] == 4008 and "messages waiting" in close[1], close
