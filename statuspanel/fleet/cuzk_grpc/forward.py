"""gRPC through the source's SSH connection: a Unix socket whose connections become direct-tcpip
channels (the same SshBackend, and so the same SSH connection and host-key policy, as the HTTP
status of that source).

grpcio's channel dials sockets itself (its C core), so it cannot be handed an SSH channel the way
httpx is; it dials this socket instead, in a private directory (mode 700) of the dashboard host, and
each connection is piped to a channel opened to the gRPC port as the remote host reaches it.
Nothing is installed on the remote host. When opening the channel fails (key refused, host key not
verifiable, port closed there), the reason is kept in `last_error`: grpcio sees only a closed socket.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from typing import TYPE_CHECKING

from statuspanel.fleet.transport import SshBackend

if TYPE_CHECKING:
    import httpcore

CHUNK = 64 * 1024


class SshForwarder:
    """`await start()`, then `target` (`unix:PATH`) for grpcio; `await aclose()` removes it all."""

    def __init__(self, backend: SshBackend, host: str, port: int, timeout: float) -> None:
        self.backend, self.host, self.port, self.timeout = backend, host, port, timeout
        self._dir = tempfile.mkdtemp(prefix="vm-grpc-")  # mkdtemp makes it 700: only this user dials it
        self.path = os.path.join(self._dir, "grpc.sock")
        self.last_error: BaseException | None = None
        self.channels = 0
        self._server: asyncio.AbstractServer | None = None
        self._open: set[asyncio.StreamWriter] = set()

    @property
    def target(self) -> str:
        return f"unix:{self.path}"

    async def start(self) -> SshForwarder:
        self._server = await asyncio.start_unix_server(self._handle, self.path)
        return self

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        try:
            try:
                stream = await self.backend.connect_tcp(self.host, self.port, timeout=self.timeout)
            except Exception as exc:  # noqa: BLE001 - any failure is kept for the poll's reason; grpcio sees the socket close
                self.last_error = exc
                return
            self.last_error = None
            self.channels += 1
            try:
                await _pipe_both(reader, writer, stream)
            finally:
                with contextlib.suppress(Exception):
                    await stream.aclose()
        finally:
            self._open.discard(writer)
            writer.close()

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._open):
                writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None
        shutil.rmtree(self._dir, ignore_errors=True)


async def _pipe_both(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     stream: httpcore.AsyncNetworkStream) -> None:
    """Bytes both ways until either side ends (then both are closed by the caller)."""

    async def up() -> None:
        while data := await reader.read(CHUNK):
            await stream.write(data)

    async def down() -> None:
        while data := await stream.read(CHUNK):
            writer.write(data)
            await writer.drain()

    tasks = [asyncio.ensure_future(up()), asyncio.ensure_future(down())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
