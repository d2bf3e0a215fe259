"""Reaching a source: HTTP(S) with httpx, or HTTP through an SSH direct-tcpip channel (asyncssh).

Both transports are one `httpx.AsyncClient` over one httpcore pool whose network backend decides
how a "TCP connection" is made, so status codes, streaming and the size cap are one code path:
for HTTP the backend resolves the host, refuses link-local and metadata addresses
(statuspanel/fleet/targets.py) and connects to the vetted address; for SSH it opens direct-tcpip
channels to the status port on the remote host's loopback (nothing is installed there). One
connection per source (the collector keeps one request in flight per source anyway).
"""
from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import ssl
import typing
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpcore
import httpx

if typing.TYPE_CHECKING:
    import asyncssh

from statuspanel.fleet.errors import Unreachable, classify, http_status
from statuspanel.fleet.shape import Malformed
from statuspanel.fleet.targets import BlockedTarget, resolve_allowed

STATUS_PATHS = {"cuzk": "/status", "vastmanager": "/api/status"}
MAX_BYTES = 8 * 1024 * 1024
# An idle kept-alive connection older than this is closed, not reused (httpx's own default).
KEEPALIVE_EXPIRY_SECS = 5.0


@dataclass(frozen=True)
class SourceConfig:
    """A source as the collector needs it: plain data, read from the table off the event loop."""

    id: int
    name: str
    kind: str
    transport: str
    url: str = ""
    ssh_user: str = ""
    ssh_host: str = ""
    ssh_port: int = 22
    ssh_key_path: str = ""
    known_hosts_policy: str = "pin"
    known_hosts_path: str = ""
    ssh_host_key: str = ""
    remote_port: int | None = None
    token: str = ""
    interval_secs: float = 1.5
    allow_link_local: bool = False   # FLEET_ALLOW_LINK_LOCAL: poll link-local / metadata targets anyway
    grpc_target: str = ""      # cuzk's gRPC HOST:PORT (over ssh: as the remote host reaches it); "" for none
    grpc_tls: bool = False
    grpc_ca_path: str = ""

    @property
    def has_http(self) -> bool:
        """Whether the HTTP status is polled (a cuzk source may have only its gRPC API)."""
        return bool(self.url) if self.transport == "http" else self.remote_port is not None

    def __repr__(self) -> str:  # never show the token, whatever prints this
        return f"SourceConfig(id={self.id}, name={self.name!r}, kind={self.kind!r}, transport={self.transport!r})"

    @property
    def connect_timeout(self) -> float:
        """Connecting may take one interval (1 to 10 s)."""
        return min(max(self.interval_secs, 1.0), 10.0)

    @property
    def read_timeout(self) -> float:
        """Each read may wait one interval (1 to 30 s): polls start an interval apart, so a link that
        dies after a good poll is `unreachable` within two intervals (the whole poll: connect + read)."""
        return min(max(self.interval_secs, 1.0), 30.0)

    def status_url(self) -> str:
        """The URL polled: a base URL gets the kind's status path; an URL with a path is used as is."""
        path = STATUS_PATHS[self.kind]
        if self.transport == "ssh":
            return f"http://127.0.0.1:{self.remote_port}{path}"
        parts = urlsplit(self.url)
        if parts.path in ("", "/"):
            return f"{self.url.rstrip('/')}{path}"
        return self.url


# ---- SSH ---------------------------------------------------------------------------------------
class _ChannelStream(httpcore.AsyncNetworkStream):
    """A direct-tcpip channel as httpcore's network stream."""

    def __init__(self, reader: asyncssh.SSHReader[bytes], writer: asyncssh.SSHWriter[bytes]) -> None:
        self._reader, self._writer = reader, writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            return await asyncio.wait_for(self._reader.read(max_bytes), timeout)
        except asyncio.TimeoutError:
            raise httpcore.ReadTimeout("read timed out") from None

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._writer.write(buffer)
        try:
            await asyncio.wait_for(self._writer.drain(), timeout)
        except asyncio.TimeoutError:
            raise httpcore.WriteTimeout("write timed out") from None

    async def aclose(self) -> None:
        self._writer.close()

    async def start_tls(self, *args: typing.Any, **kwargs: typing.Any) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("TLS inside the ssh channel is not supported")

    def get_extra_info(self, info: str) -> typing.Any:
        # httpcore asks before reusing an idle keep-alive connection: readable while idle means the
        # server closed it (EOF, or the channel or the whole ssh connection gone), so it is dropped
        # and a fresh channel opened instead of a request sent into a closed one.
        if info == "is_readable":
            return self._reader.at_eof() or self._writer.is_closing()
        return None


class SshBackend(httpcore.AsyncNetworkBackend):
    """Opens httpcore's "TCP connections" as channels of one SSH connection, kept and re-made when lost."""

    def __init__(self, cfg: SourceConfig, on_pin: typing.Callable[[str], None] | None = None) -> None:
        self.cfg = cfg
        self.on_pin = on_pin
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lock = asyncio.Lock()

    async def _connection(self, timeout: float | None) -> asyncssh.SSHClientConnection:
        import asyncssh

        async with self._lock:
            if self._conn is not None and not self._conn.is_closed():
                return self._conn
            cfg = self.cfg
            known_hosts: typing.Any
            if cfg.known_hosts_policy == "strict":
                known_hosts = os.path.expanduser(cfg.known_hosts_path or "~/.ssh/known_hosts")
                if not Path(known_hosts).is_file():
                    raise Unreachable("ssh", f"ssh: known-hosts file {known_hosts} does not exist")
            elif cfg.known_hosts_policy == "pin" and cfg.ssh_host_key:
                pattern = cfg.ssh_host if cfg.ssh_port == 22 else f"[{cfg.ssh_host}]:{cfg.ssh_port}"
                known_hosts = asyncssh.import_known_hosts(f"{pattern} {cfg.ssh_host_key}\n")
            else:  # pin with nothing pinned yet (the first key is kept below), or off
                known_hosts = None
            try:
                await resolve_allowed(cfg.ssh_host, cfg.ssh_port, allow_link_local=cfg.allow_link_local)
            except BlockedTarget as exc:
                raise Unreachable("blocked", str(exc)) from None
            try:
                keys = asyncssh.load_keypairs([os.path.expanduser(cfg.ssh_key_path)])
            except (OSError, asyncssh.KeyImportError) as exc:
                raise Unreachable("ssh", f"ssh: cannot load the key file {cfg.ssh_key_path}: {exc}") from None
            try:
                conn = await asyncio.wait_for(
                    asyncssh.connect(cfg.ssh_host, cfg.ssh_port, username=cfg.ssh_user, client_keys=keys,
                                     known_hosts=known_hosts, agent_path=None, config=None, keepalive_interval=15,
                                     login_timeout=timeout),
                    timeout)
            except asyncio.TimeoutError:
                raise httpcore.ConnectTimeout("ssh connect timed out") from None
            if cfg.known_hosts_policy == "pin" and not cfg.ssh_host_key:
                key = conn.get_server_host_key()
                if key is not None:  # first use: this key is the one every later connection must show
                    pinned = key.export_public_key("openssh").decode().strip()
                    self.cfg = dataclasses.replace(cfg, ssh_host_key=pinned)
                    if self.on_pin is not None:
                        self.on_pin(pinned)
            self._conn = conn
            return conn

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: typing.Iterable[typing.Any] | None = None) -> httpcore.AsyncNetworkStream:
        conn = await self._connection(timeout)
        try:
            reader, writer = await asyncio.wait_for(conn.open_connection(host, port), timeout)
        except asyncio.TimeoutError:
            raise httpcore.ConnectTimeout("ssh channel open timed out") from None
        return _ChannelStream(reader, writer)

    async def connect_unix_socket(self, *args: typing.Any, **kwargs: typing.Any) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not reached over ssh")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def aclose(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Plain TCP, but only to addresses the source may reach: the name is resolved here, every
    address checked (statuspanel/fleet/targets.py) and the connection made to a vetted address.
    TLS still verifies the URL's host name (httpcore passes it as the server name)."""

    def __init__(self, cfg: SourceConfig) -> None:
        self.cfg = cfg
        self._tcp = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: typing.Iterable[typing.Any] | None = None) -> httpcore.AsyncNetworkStream:
        try:
            with anyio.fail_after(timeout):
                addresses = await resolve_allowed(host, port, allow_link_local=self.cfg.allow_link_local)
        except BlockedTarget as exc:
            raise Unreachable("blocked", str(exc)) from None
        except TimeoutError:
            raise httpcore.ConnectTimeout("name resolution timed out") from None
        error: Exception | None = None
        for address in addresses:
            try:
                return await self._tcp.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                                   socket_options=socket_options)
            except httpcore.ConnectError as exc:  # the next address, as a resolver-driven client would
                error = exc
        raise error or httpcore.ConnectError(f"{host} resolved to no address")

    async def connect_unix_socket(self, *args: typing.Any, **kwargs: typing.Any) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("sources are not reached over unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._tcp.sleep(seconds)


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: typing.AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> typing.AsyncIterator[bytes]:
        async for part in self._stream:
            yield part

    async def aclose(self) -> None:
        if hasattr(self._stream, "aclose"):
            await self._stream.aclose()


class PoolTransport(httpx.AsyncBaseTransport):
    """httpx over a one-connection httpcore pool with our network backend (errors are classified by
    the caller, which reads httpcore's exceptions as well as httpx's)."""

    def __init__(self, backend: httpcore.AsyncNetworkBackend, ssl_context: ssl.SSLContext | None = None) -> None:
        self.backend = backend
        self._pool = httpcore.AsyncConnectionPool(network_backend=backend, ssl_context=ssl_context,
                                                  max_connections=1, max_keepalive_connections=1, retries=0,
                                                  keepalive_expiry=KEEPALIVE_EXPIRY_SECS)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        req = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host, port=request.url.port,
                             target=request.url.raw_path),
            headers=request.headers.raw, content=request.stream, extensions=request.extensions)
        resp = await self._pool.handle_async_request(req)
        return httpx.Response(status_code=resp.status, headers=resp.headers, stream=_ResponseStream(
            typing.cast("typing.AsyncIterable[bytes]", resp.stream)),  # the async pool streams asynchronously
                              extensions=resp.extensions)

    async def aclose(self) -> None:
        await self._pool.aclose()
        if hasattr(self.backend, "aclose"):
            await self.backend.aclose()


# ---- the client and one fetch -------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every source: loading the CA bundle takes about 0.1 s, which
    each new client would otherwise pay (on the collector's loop, 100 sources: 10 s)."""
    return httpx.create_ssl_context()


def make_client(cfg: SourceConfig, on_pin: typing.Callable[[str], None] | None = None,
                backend: SshBackend | None = None) -> httpx.AsyncClient:
    """A source's client. Call tls_context() once off the loop first (the collector does). An ssh
    source's `backend` may be shared (its gRPC channel uses the same SSH connection)."""
    timeout = httpx.Timeout(cfg.read_timeout, connect=cfg.connect_timeout)
    headers = {"Accept": "application/json", "User-Agent": "vastmanager-fleet"}
    if cfg.token:
        headers["Authorization"] = f"Bearer {cfg.token}"
    if cfg.transport == "ssh":
        transport = PoolTransport(backend or SshBackend(cfg, on_pin))
    else:
        transport = PoolTransport(GuardedBackend(cfg), ssl_context=tls_context())
    return httpx.AsyncClient(transport=transport, timeout=timeout, headers=headers, follow_redirects=False,
                             trust_env=False)


async def fetch(client: httpx.AsyncClient, cfg: SourceConfig, max_bytes: int = MAX_BYTES) -> bytes:
    """The status document's bytes, cut off past `max_bytes`; Unreachable or Malformed otherwise.

    The whole poll has a deadline (connect + read timeouts): a server that drips one byte a second
    never trips the read timeout, but still cannot hold the source's one request forever. The
    deadline is an anyio cancel scope inside the request, which httpcore's cleanup honours: an
    outer `asyncio.wait_for` that fired while the loop was busy could cancel the request half-way
    and leave it in the one-connection pool, and every later poll then timed out waiting for it."""
    deadline = cfg.connect_timeout + cfg.read_timeout
    try:
        with anyio.fail_after(deadline):
            return await _fetch(client, cfg, max_bytes)
    except (Unreachable, Malformed):
        raise
    except TimeoutError:
        raise Unreachable("timeout", f"timeout: no complete answer within {deadline:g} s") from None
    except Exception as exc:  # noqa: BLE001 - every transport error becomes a reason the panel shows
        raise classify(exc, timeout_secs=cfg.read_timeout) from None


async def _fetch(client: httpx.AsyncClient, cfg: SourceConfig, max_bytes: int) -> bytes:
    async with client.stream("GET", cfg.status_url()) as response:
        if response.status_code != 200:
            raise http_status(response.status_code)
        announced = response.headers.get("content-length", "")
        if announced.isdigit() and int(announced) > max_bytes:
            raise Malformed(f"too large: the answer announces {int(announced)} bytes, over the {max_bytes} byte cap",
                            reason="too-large")
        body = bytearray()
        async for chunk in response.aiter_bytes():  # decoded: a compressed bomb is cut off too
            body += chunk
            if len(body) > max_bytes:
                raise Malformed(f"too large: the answer is over the {max_bytes} byte cap (cut off)",
                                reason="too-large")
        return bytes(body)
