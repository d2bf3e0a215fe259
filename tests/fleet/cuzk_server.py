"""A cuzk-like status server for the fleet tests and the fleet benchmark: real HTTP on a real socket.

It answers `GET /status` (and `/`) the way a cuzk daemon does, with the fixture document
(tests/fixtures/cuzk-status-snapdeals.json) and a clock that moves, or misbehaves on purpose:

  fixture    the fixture, its durations growing with wall-clock time
  race       a scripted sequence (RACE_STEPS) cycling every --step-secs, including the split-proving
             race of an unfixed cuzk daemon: partitions in `gpu` while their workers are idle
  html       200 with an HTML page (a captive portal, a proxy's error page)
  truncated  200, `application/json`, the document cut in half (a correct Content-Length)
  huge       200 with a 50 MiB JSON body, streamed (Content-Length announced)
  flood      the same 50 MiB without a Content-Length (ends when the connection closes)
  hang       accepts the connection, reads the request and never answers
  unauthorized  401 with a JSON error (also what every mode answers without --token's bearer token)
  forbidden  403 with a JSON error
  deep       200 with JSON nested 100,000 levels deep

In a test: `with CuzkServer("fixture") as server: server.url`; `server.mode = "html"` switches live.
As a script: `python tests/fleet/cuzk_server.py --port N --mode MODE [--host H] [--token T]`; it prints
`listening on http://HOST:PORT` once bound (port 0 picks a free one) and serves until killed.
"""
from __future__ import annotations

import argparse
import copy
import json
import select
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cuzk-status-snapdeals.json"
MODES = ("fixture", "race", "html", "truncated", "huge", "flood", "hang", "unauthorized", "forbidden", "deep")
HUGE_BYTES = 50 * 1024 * 1024
RACE_JOB = "ps-snap-1000-42-7"


def load_fixture() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


def moving(doc: dict[str, Any], elapsed: float) -> dict[str, Any]:
    """The document `elapsed` seconds later: uptime, ages and the open phases' durations grow."""
    doc = copy.deepcopy(doc)
    doc["uptime_secs"] = round(doc.get("uptime_secs", 0.0) + elapsed, 3)
    for pipe in doc.get("pipelines", []):
        pipe["started_secs_ago"] = round(pipe.get("started_secs_ago", 0.0) + elapsed, 3)
        for part in pipe.get("partitions", []):
            if part.get("state") == "gpu" and part.get("gpu_ms") is not None:
                part["gpu_ms"] = round(part["gpu_ms"] + elapsed * 1000.0)
            elif part.get("state") == "synthesizing" and part.get("synth_ms") is not None:
                part["synth_ms"] = round(part["synth_ms"] + elapsed * 1000.0)
    for worker in doc.get("gpu_workers", []):
        if worker.get("state") == "proving":
            worker["busy_secs"] = round(worker.get("busy_secs", 0.0) + elapsed, 3)
    return doc


def _set(doc: dict[str, Any], states: dict[int, str], workers: list[tuple[str, int | None]]) -> dict[str, Any]:
    """The fixture with partitions of RACE_JOB put in `states` and workers (state, partition) set."""
    doc = copy.deepcopy(doc)
    parts = doc["pipelines"][0]["partitions"]
    for index, state in states.items():
        parts[index]["state"] = state
        parts[index]["gpu_ms"] = None if state in ("pending", "synthesizing", "synth_done") else 1000
    for worker, (state, partition) in zip(doc["gpu_workers"], workers):
        worker["state"] = state
        worker["current_job"] = RACE_JOB if partition is not None else None
        worker["current_partition"] = partition
        worker["busy_secs"] = 0.5 if partition is not None else 0.0
    return doc


def race_steps(doc: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The scripted sequence of `race` mode: (name, document). The names say what is wrong, if anything:

    consistent     W0 proves p5, W1 proves p6, both in `gpu`
    race           p5 and p6 in `gpu`, both workers idle (cuzk's unguarded release: the late
                   gpu_end of the previous partition marked the worker idle)
    orphan-worker  W0 proves p7, which is still `synth_done` (not in `gpu`); p5 done
    settled        p5 and p6 done, workers idle: consistent again
    """
    base = doc or load_fixture()
    return [
        ("consistent", _set(base, {5: "gpu", 6: "gpu"}, [("proving", 5), ("proving", 6)])),
        ("race", _set(base, {5: "gpu", 6: "gpu"}, [("idle", None), ("idle", None)])),
        ("orphan-worker", _set(base, {5: "done", 6: "gpu", 7: "synth_done"}, [("proving", 7), ("proving", 6)])),
        ("settled", _set(base, {5: "done", 6: "done"}, [("idle", None), ("idle", None)])),
    ]


def deep_json(levels: int = 100_000) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


class _Server(ThreadingHTTPServer):
    """Keeps its open connections, so that stopping it drops them too (a kept-alive connection would
    otherwise go on being answered by its handler thread after the listening socket is closed)."""

    daemon_threads = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.open_connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conn_lock:
            self.open_connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conn_lock:
            self.open_connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self._conn_lock:
            connections, self.open_connections = list(self.open_connections), set()
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class CuzkServer:
    """A threaded HTTP server on a real socket; `mode` may be changed while it serves."""

    def __init__(self, mode: str = "fixture", *, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 doc: dict[str, Any] | None = None, step_secs: float = 2.0, freeze_step: int | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
        self.mode = mode
        self.token = token
        self.doc = doc if doc is not None else load_fixture()
        self.step_secs = step_secs
        self.freeze_step = freeze_step
        self.started = time.monotonic()
        self.requests = 0
        self.in_flight = 0            # requests being answered now (hang mode holds them)
        self.max_in_flight = 0
        self._count_lock = threading.Lock()
        self._steps = race_steps(self.doc)
        self._stopping = threading.Event()
        self._httpd = _Server((host, port), self._handler())
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        host = self._httpd.server_address[0]
        return f"http://{host}:{self.port}"

    def race_step(self) -> tuple[str, dict[str, Any]]:
        """The step of the race sequence being served now."""
        if self.freeze_step is not None:
            return self._steps[self.freeze_step % len(self._steps)]
        index = int((time.monotonic() - self.started) / self.step_secs) % len(self._steps)
        return self._steps[index]

    def body(self) -> tuple[int, str, bytes]:
        """(status, content type, body) for the current mode (hang and huge are streamed instead)."""
        elapsed = time.monotonic() - self.started
        if self.mode == "fixture":
            return 200, "application/json", json.dumps(moving(self.doc, elapsed)).encode()
        if self.mode == "race":
            return 200, "application/json", json.dumps(moving(self.race_step()[1], elapsed)).encode()
        if self.mode == "html":
            return 200, "text/html", b"<!doctype html><html><body><h1>It works!</h1></body></html>"
        if self.mode == "truncated":
            full = json.dumps(self.doc).encode()
            return 200, "application/json", full[: len(full) // 2]
        if self.mode == "deep":
            return 200, "application/json", deep_json()
        if self.mode == "forbidden":
            return 403, "application/json", b'{"error": "forbidden"}'
        return 401, "application/json", b'{"error": "unauthorized"}'

    def _handler(self) -> type[BaseHTTPRequestHandler]:  # noqa: C901 - one request handler for every mode the fake server plays
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read their own output
                pass

            def do_GET(self) -> None:  # the name http.server dispatches to
                with server._count_lock:
                    server.requests += 1
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    self._answer()
                finally:
                    with server._count_lock:
                        server.in_flight -= 1

            def _answer(self) -> None:
                if self.path.split("?")[0] not in ("/status", "/"):
                    return self._send(404, "application/json", b'{"error": "not found"}')
                if server.token is not None and self.headers.get("Authorization") != f"Bearer {server.token}":
                    return self._send(401, "application/json", b'{"error": "unauthorized"}')
                mode = server.mode
                if mode == "hang":  # never answer; notice when the client gives up and closes
                    while not server._stopping.is_set() and not self._client_gone():
                        pass
                    self.close_connection = True
                    return None
                if mode in ("huge", "flood"):
                    return self._huge(announce=mode == "huge")
                return self._send(*server.body())

            def _client_gone(self) -> bool:
                readable, _, _ = select.select([self.connection], [], [], 0.2)
                if not readable:
                    return False
                try:
                    pending = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    return True
                if pending:  # the client sent more (left unread): not gone, and no busy loop
                    time.sleep(0.2)
                return pending == b""

            def _send(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            def _huge(self, announce: bool) -> None:
                chunk = b" " * 65536
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if announce:
                    self.send_header("Content-Length", str(HUGE_BYTES))
                else:
                    self.send_header("Connection", "close")
                self.end_headers()
                try:
                    self.wfile.write(b"[")
                    sent = 1
                    while sent < HUGE_BYTES - 1:
                        piece = chunk[: HUGE_BYTES - 1 - sent]
                        self.wfile.write(piece)
                        sent += len(piece)
                    self.wfile.write(b"]")
                except (BrokenPipeError, ConnectionResetError):  # the client cut it off, as it should
                    pass
                self.close_connection = True

        return Handler

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> CuzkServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"cuzk-server-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd.drop_connections()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> CuzkServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--mode", choices=MODES, default="fixture")
    parser.add_argument("--token", default=None, help="answer 401 unless 'Authorization: Bearer TOKEN' is sent")
    parser.add_argument("--file", type=Path, default=None, help="serve this JSON document instead of the fixture")
    parser.add_argument("--step-secs", type=float, default=2.0, help="race mode: seconds per scripted step")
    parser.add_argument("--freeze-step", type=int, default=None, help="race mode: always serve this step (0-3)")
    args = parser.parse_args(argv)
    doc = json.loads(args.file.read_text()) if args.file else None
    server = CuzkServer(args.mode, host=args.host, port=args.port, token=args.token, doc=doc,
                        step_secs=args.step_secs, freeze_step=args.freeze_step)
    print(f"listening on {server.url}", flush=True)
    try:
        server._httpd.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        server._stopping.set()
        server._httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
