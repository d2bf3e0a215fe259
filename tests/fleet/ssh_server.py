"""An SSH server on loopback (asyncssh, in a thread of its own) that forwards direct-tcpip channels:
what sshd does for the collector's ssh transport, with keys made by the test."""
from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import asyncssh


class ForwardingSshServer:
    """`with ForwardingSshServer(tmp, authorized=client_key.pub) as s: s.port, s.host_key_line`."""

    def __init__(self, workdir: Path, authorized_key: asyncssh.SSHKey, *, user: str = "fleet",
                 host_key: asyncssh.SSHKey | None = None) -> None:
        self.user = user
        self.authorized = authorized_key.export_public_key("openssh").decode().strip()
        self.host_key = host_key or asyncssh.generate_private_key("ssh-ed25519")
        self.port = 0
        self.channels = 0
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._server = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="ssh-server", daemon=True)

    @property
    def host_key_line(self) -> str:
        """The host key as a known-hosts entry's key part (`ssh-ed25519 AAAA...`)."""
        return self.host_key.export_public_key("openssh").decode().strip()

    def add_source(self, name: str, key_path: Path, *args: str, interval: float = 0.3) -> None:
        """`addsource NAME --kind cuzk --ssh USER@127.0.0.1:PORT --key KEY_PATH *args`: a source
        polled through this server (what it reaches behind it: `--remote-port`, `--grpc`)."""
        from django.core.management import call_command

        call_command("addsource", name, "--kind", "cuzk", "--ssh", f"{self.user}@127.0.0.1:{self.port}",
                     "--key", str(key_path), "--interval", str(interval), *args)

    def start(self) -> ForwardingSshServer:
        outer = self

        class Server(asyncssh.SSHServer):
            def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
                outer.connections += 1

            def begin_auth(self, username: str) -> bool:
                return True

            def public_key_auth_supported(self) -> bool:
                return True

            def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
                return username == outer.user and key.export_public_key("openssh").decode().strip() == outer.authorized

            def connection_requested(self, dest_host: str, dest_port: int, orig_host: str, orig_port: int) -> bool:
                outer.channels += 1
                return dest_host in ("127.0.0.1", "localhost")  # forwarded to the box's own loopback only

        async def listen():
            return await asyncssh.create_server(Server, "127.0.0.1", 0, server_host_keys=[self.host_key])

        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(listen(), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        async def close():
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def __enter__(self) -> ForwardingSshServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def client_key(path: Path) -> asyncssh.SSHKey:
    """A fresh client key written to `path` (private, mode 600) and returned."""
    key = asyncssh.generate_private_key("ssh-ed25519")
    key.write_private_key(str(path))
    path.chmod(0o600)
    return key
