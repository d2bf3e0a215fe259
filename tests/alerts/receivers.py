"""Real receivers for the alert tests and the bench: an HTTP server on loopback that records what
is posted to it (and can fail, hang or flood on purpose), and aiosmtpd as a real SMTP server.

`WebhookReceiver(mode)`: modes `ok` (200), `fail` (500 every time), `fail-then-ok` (500 for the
first `failures` posts, then 200), `hang` (reads the post, never answers), `flood` (200 with a
100 MB body streamed). `posts` holds (headers, raw body, arrival time) of each post.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FLOOD_BYTES = 100 * 1024 * 1024


class WebhookReceiver:
    def __init__(self, mode: str = "ok", *, failures: int = 2) -> None:
        self.mode, self.failures = mode, failures
        self.posts: list[tuple[dict[str, str], bytes, float]] = []
        self.attempts = 0
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/hook?token=s3cr3t-path-token"

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [json.loads(raw) for _, raw, _ in self.posts]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.attempts += 1
                    attempt = receiver.attempts
                if receiver.mode == "hang":
                    receiver._release.wait(120)
                    self.close_connection = True  # released: drop the connection unanswered
                    return
                failing = receiver.mode == "fail" or (receiver.mode == "fail-then-ok" and attempt <= receiver.failures)
                if failing:
                    return self._answer(500, b'{"error": "down for maintenance"}')
                with receiver._lock:
                    receiver.posts.append(({k.lower(): v for k, v in self.headers.items()}, raw, time.monotonic()))
                if receiver.mode == "flood":
                    self.send_response(200)
                    self.send_header("Content-Length", str(FLOOD_BYTES))
                    self.end_headers()
                    chunk = b"x" * (1 << 20)
                    try:
                        for _ in range(FLOOD_BYTES // len(chunk)):
                            self.wfile.write(chunk)
                    except OSError:
                        pass
                    return
                self._answer(200, b'{"ok": true}')

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler


def valid_signature(secret: str, headers: dict[str, str], raw: bytes) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    return hmac.compare_digest(headers.get("x-vastmanager-signature", ""), expected)


class SmtpReceiver:
    """aiosmtpd on a loopback port, keeping every message received."""

    def __init__(self) -> None:
        from aiosmtpd.controller import Controller

        receiver = self
        self.messages: list[tuple[str, list[str], bytes]] = []

        class Handler:
            async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
                receiver.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
                return "250 Message accepted for delivery"

        with socket.socket() as probe:  # aiosmtpd checks readiness by connecting: it needs a real port
            probe.bind(("127.0.0.1", 0))
            self._port = probe.getsockname()[1]
        self._controller = Controller(Handler(), hostname="127.0.0.1", port=self._port)

    def __enter__(self) -> SmtpReceiver:
        self._controller.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._controller.stop()

    @property
    def port(self) -> int:
        return self._port
