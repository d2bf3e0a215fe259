"""Through the real server (`watchfleet`, Daphne, the fleet collector): sources whose frames would be
over the WebSocket frame limit (a fleet source with 1,500 workers, a full circuit batch of 256
partitions with their errors) reach the panel summarised, within the limit, and the stream stays open:
the healthy source beside them keeps streaming."""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.credentials import TOKEN
from tests.fleet.dashboard import Dashboard
from tests.panel.helpers import cuzk_fixture
from tests.panel.wsclients import handshake

FRAME_LIMIT = 1 << 20  # the default WS_MAX_FRAME_BYTES: autobahn's own default
WATCH_SECS = 12

pytestmark = pytest.mark.slow  # a real dashboard process polling real HTTP sources


def _big_fleet_doc() -> dict[str, Any]:
    doc = cuzk_fixture()
    job = "ps-snap-" + "0123456789" * 10
    doc["gpu_workers"] = [{"worker_id": i, "gpu_ordinal": i // 8, "state": "proving", "current_job": f"{job}-{i}",
                           "current_partition": i % 16, "busy_secs": 1.5} for i in range(1500)]
    return doc


def _batch_doc() -> dict[str, Any]:
    doc = cuzk_fixture()
    error = "witness: Assert Failed. Error in template Main_12 line: 34 " * 40
    doc["pipelines"] = [{"job_id": "circuit-batch-256", "proof_kind": "snap-update", "started_secs_ago": 9.0,
                         "total_partitions": 256, "partitions_done": 0,
                         "partitions": [{"index": i, "state": "failed", "synth_ms": 120.5, "gpu_ms": None,
                                         "error": f"{i}: {error}"} for i in range(256)]}]
    return doc


class _Sources(BaseHTTPRequestHandler):
    docs: dict[str, bytes] = {}

    def do_GET(self) -> None:
        body = self.docs.get(self.path.split("/")[1], b"")
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def _read_frames(sock: socket.socket, secs: float) -> tuple[list[bytes], tuple[int, str] | None]:
    """Unmasked server frames for `secs` (or until a close frame): text payloads and (code, reason)."""
    deadline = time.monotonic() + secs
    buf, texts = b"", []
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = sock.recv(1 << 20)
        except socket.timeout:
            break
        if not chunk:
            return texts, (1006, "connection lost")
        buf += chunk
        while len(buf) >= 2:
            opcode, length, offset = buf[0] & 0x0F, buf[1] & 0x7F, 2
            if length == 126:
                length, offset = int.from_bytes(buf[2:4], "big"), 4
            elif length == 127:
                length, offset = int.from_bytes(buf[2:10], "big"), 10
            if len(buf) < offset + length:
                break
            payload, buf = buf[offset:offset + length], buf[offset + length:]
            if opcode == 0x8:
                return texts, (int.from_bytes(payload[:2], "big"), payload[2:].decode("utf-8", "replace"))
            if opcode == 0x1:
                texts.append(payload)
    return texts, None


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    _Sources.docs = {"big": json.dumps(_big_fleet_doc()).encode(), "batch": json.dumps(_batch_doc()).encode(),
                     "small": json.dumps(cuzk_fixture()).encode()}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sources)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    dash = Dashboard(tmp_path_factory.mktemp("frame-limit"), TOKEN)
    # The per-source cap at the door (FLEET_MAX_WORKERS, 512) would refuse the 1,500-worker source; this
    # test is about what reaches the stream when a source is allowed to be that big.
    dash.env["FLEET_MAX_WORKERS"] = "4096"
    for name in ("big", "batch", "small"):
        dash.add_source(name, "--kind", "cuzk", "--url", f"http://127.0.0.1:{server.server_port}/{name}/status",
                        "--interval", "0.5")
    dash.start()
    yield dash
    dash.stop()
    server.shutdown()


def test_huge_sources_stream_within_the_frame_limit_beside_a_healthy_one(fleet):
    sock, head = handshake(fleet.port, f"token={TOKEN}", rcvbuf=1 << 22)
    assert head.startswith(b"HTTP/1.1 101"), head
    texts, close = _read_frames(sock, WATCH_SECS)
    sock.close()
    assert close is None, f"the stream was closed: {close}\n{fleet.tail()}"
    frames = [json.loads(t) for t in texts if json.loads(t).get("type") == "snapshot"]
    by_engine: dict[str, list[dict]] = {}
    for frame in frames:
        by_engine.setdefault(frame["engine_id"], []).append(frame)
    assert max(len(t) for t in texts) <= FRAME_LIMIT
    big = [f for f in by_engine.get("big", []) if f["snapshot"].get("gpu_workers")]
    assert big, sorted(by_engine)
    assert 'data-hidden-workers="' in big[-1]["html"] and "/api/fleet" in big[-1]["html"]
    # The tally still counts every worker of the source.
    assert '&quot;proving&quot;:1500' in big[-1]["html"]
    batch = [f for f in by_engine.get("batch", []) if f["snapshot"].get("pipelines")]
    assert batch and 'data-hidden-partitions="' in batch[-1]["html"]
    # The healthy source kept streaming beside them (one frame per poll that changed anything).
    assert len(by_engine.get("small", [])) >= 3, {k: len(v) for k, v in by_engine.items()}
    assert "Traceback" not in fleet.tail(100_000)
