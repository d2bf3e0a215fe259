"""WebSocket clients of a live server for the slow-client test and its benchmark: clients that never
read (a raw handshake on a socket with a small receive buffer, then silence) and clients that read
every frame and count them."""
from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import threading
import time


def handshake(port: int, query: str, origin: str | None = None, rcvbuf: int = 4096,
              timeout: float = 30) -> tuple[socket.socket, bytes]:
    """Open /ws/status/ over a raw socket; return it and the response head (nothing after it is read)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connect: the window it offers
    sock.settimeout(timeout)
    sock.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    origin = origin or f"http://127.0.0.1:{port}"
    sock.sendall((f"GET /ws/status/?{query} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                  f"Origin: {origin}\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        byte = sock.recv(1)  # one byte at a time: not one byte of the first frame is consumed
        if not byte:
            break
        head += byte
    return sock, head


def closed_by_server(sock: socket.socket, timeout: float = 10) -> bool:
    """Read whatever is queued; True when the stream ends (EOF or reset) within `timeout`."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sock.recv(1 << 20):
                return True
    except ConnectionResetError:
        return True
    except (TimeoutError, socket.timeout):
        return False
    return False


class FrameCounter:
    """A client that reads every frame, on its own thread and loop; `times` are the snapshot arrivals."""

    def __init__(self, url: str, origin: str) -> None:
        self.url, self.origin = url, origin
        self.times: list[float] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    def start(self) -> FrameCounter:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    async def _main(self) -> None:
        from websockets.asyncio.client import connect

        try:
            async with connect(self.url, origin=self.origin, open_timeout=60, max_size=None) as ws:
                while not self._stop.is_set():
                    try:
                        raw = await asyncio.wait_for(ws.recv(), 0.25)
                    except TimeoutError:
                        continue
                    if json.loads(raw).get("type") == "snapshot":
                        self.times.append(time.monotonic())
        except BaseException as exc:  # noqa: BLE001 - reported by rate()
            self.error = exc

    def rate(self, start: float, end: float) -> float:
        """Snapshot frames a second received between two monotonic times."""
        if self.error is not None:
            raise AssertionError(f"fast client failed: {self.error!r}")
        return sum(1 for t in self.times if start <= t < end) / max(end - start, 1e-9)


def established(pid: int, port: int) -> int:
    """Connections the server process `pid` holds open on its listening `port`."""
    import psutil

    return sum(1 for c in psutil.Process(pid).net_connections(kind="tcp")
               if c.laddr and c.laddr.port == port and c.status == psutil.CONN_ESTABLISHED)


def slow_client_run(pid: int, port: int, token: str, *, slow: int, seconds: float, fast: int = 3,
                    warmup: float = 10.0, baseline: float = 10.0, settle: float = 10.0, waves: int = 1,
                    log=lambda line: None) -> dict[str, float]:
    """Against a live server proving jobs: `fast` reading clients, then `waves` times `slow` clients that
    never read for `seconds` (each wave closed before the next); the serving process's RSS (psutil)
    and the fast clients' frame rate throughout. A second wave that peaks no higher than the first
    shows the first one's memory was given back for reuse when its clients left."""
    import psutil

    proc = psutil.Process(pid)
    origin = f"http://127.0.0.1:{port}"
    url = f"ws://127.0.0.1:{port}/ws/status/?token={token}"
    readers = [FrameCounter(url, origin).start() for _ in range(fast)]
    sockets: list[socket.socket] = []
    figures: dict[str, float] = {}
    try:
        time.sleep(warmup)
        figures["rss_before_mb"] = proc.memory_info().rss / 2**20
        base_start = time.monotonic()
        time.sleep(baseline)
        figures["fast_rate_before"] = sum(r.rate(base_start, time.monotonic()) for r in readers) / fast
        for wave in range(1, waves + 1):
            for _ in range(slow):
                sock, head = handshake(port, f"token={token}")
                if not head.startswith(b"HTTP/1.1 101"):
                    raise AssertionError(f"slow client not admitted: {head[:200]!r}")
                sockets.append(sock)
            log(f"wave {wave}: {slow} slow clients connected")
            during_start = time.monotonic()
            peak = proc.memory_info().rss
            while time.monotonic() < during_start + seconds:
                time.sleep(1.0)
                peak = max(peak, proc.memory_info().rss)
            during_end = time.monotonic()
            suffix = "" if wave == 1 else f"_{wave}"
            figures[f"rss_peak_mb{suffix}"] = peak / 2**20
            figures[f"rss_end_mb{suffix}"] = proc.memory_info().rss / 2**20
            figures[f"fast_rate_during{suffix}"] = sum(r.rate(during_start, during_end) for r in readers) / fast
            figures[f"slow_still_connected{suffix}"] = float(established(pid, port) - fast)
            for sock in sockets:
                sock.close()
            sockets.clear()
            time.sleep(settle)
            figures[f"rss_after_leave_mb{suffix}"] = proc.memory_info().rss / 2**20
        return figures
    finally:
        for sock in sockets:
            sock.close()
        for reader in readers:
            reader.stop()


def server_holds(pid: int, client: socket.socket) -> bool:
    """Whether the server process still holds the connection of this client socket."""
    import psutil

    mine = client.getsockname()[1]
    return any(c.raddr and c.raddr.port == mine and c.status == psutil.CONN_ESTABLISHED
               for c in psutil.Process(pid).net_connections(kind="tcp"))


def read_frames_until_close(sock: socket.socket, timeout: float = 10) -> tuple[list[bytes], tuple[int, str] | None]:
    """Parse server frames (unmasked) until a close frame; return the text payloads and (code, reason)."""
    sock.settimeout(timeout)
    buf = b""
    texts: list[bytes] = []

    def need(n: int) -> bool:
        nonlocal buf
        while len(buf) < n:
            chunk = sock.recv(65536)
            if not chunk:
                return False
            buf += chunk
        return True

    while need(2):
        opcode, length = buf[0] & 0x0F, buf[1] & 0x7F
        offset = 2
        if length == 126:
            if not need(4):
                break
            length, offset = int.from_bytes(buf[2:4], "big"), 4
        elif length == 127:
            if not need(10):
                break
            length, offset = int.from_bytes(buf[2:10], "big"), 10
        if not need(offset + length):
            break
        payload, buf = buf[offset:offset + length], buf[offset + length:]
        if opcode == 0x8:
            code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
            return texts, (code, payload[2:].decode("utf-8", "replace"))
        if opcode == 0x1:
            texts.append(payload)
    return texts, None


def masked_text_frame(text: str) -> bytes:
    """A client-to-server text frame (clients must mask)."""
    payload = text.encode()
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x81])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 1 << 16:
        head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head += bytes([0x80 | 127]) + n.to_bytes(8, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
