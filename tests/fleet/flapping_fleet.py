"""Many real HTTP status servers on loopback that flap: one asyncio thread listening on N ports,
answering the cuzk fixture and a 503 in turn while `flapping` is set, the fixture alone otherwise
(keep-alive connections, as the collector uses). Cheaper than N threaded servers, same sockets."""
from __future__ import annotations

import asyncio
import json
import threading

from tests.fleet.cuzk_server import load_fixture


class FlappingFleet:
    """`with FlappingFleet(200) as fleet: fleet.ports; fleet.flapping = False`."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.ports: list[int] = []
        self.flapping = True
        self.requests = 0
        body = json.dumps(load_fixture()).encode()
        self._ok = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
                    + body)
        self._down = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
        self._loop = asyncio.new_event_loop()
        self._servers: list[asyncio.base_events.Server] = []
        self._thread = threading.Thread(target=self._loop.run_forever, name="flapping-fleet", daemon=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answered = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if not head:
                    break
                self.requests += 1
                down = self.flapping and answered % 2 == 1
                answered += 1
                writer.write(self._down if down else self._ok)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    def start(self) -> FlappingFleet:
        self._thread.start()

        async def listen() -> None:
            for _ in range(self.n):
                server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
                self._servers.append(server)
                self.ports.append(server.sockets[0].getsockname()[1])

        asyncio.run_coroutine_threadsafe(listen(), self._loop).result(30)
        return self

    def stop(self) -> None:
        async def close() -> None:
            for server in self._servers:
                server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def __enter__(self) -> FlappingFleet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    """As a process of its own (its CPU not the collector's): prints the ports as JSON, flaps until
    a line `calm` arrives on stdin, then answers the snapshot alone until stdin closes."""
    import sys

    with FlappingFleet(int(sys.argv[1])) as fleet:
        print(json.dumps(fleet.ports), flush=True)
        for line in sys.stdin:
            if line.strip() == "calm":
                fleet.flapping = False
                print("calm", flush=True)


if __name__ == "__main__":
    main()
