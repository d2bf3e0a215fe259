"""One source's gRPC channel to a cuzk daemon: `GetStatus` / `GetMetrics` with the HTTP transport's
bounds, and every failure in the panel's words (`Unreachable` / `Malformed` with a reason).

grpcio's synchronous channel is used through its futures: the call runs in grpcio's own threads and
its completion is handed to the collector's loop, so no thread of ours waits on a source and no
grpcio object is bound to an event loop. Bounds, as for HTTP: a call on a channel that still has to
connect has a deadline of the connect plus read timeouts, one on a channel that has answered before
the read timeout alone (as a kept-alive HTTP connection's read), so a link that dies after a good
poll is `unreachable` within two intervals; answers over the size cap are refused by grpcio itself
(`grpc.max_receive_message_length`, RESOURCE_EXHAUSTED) before being decoded. After a failed call
the channel is dropped (`reset()`, by the poll once all its calls have settled), so the next try,
after the collector's backoff, dials afresh instead of waiting out grpcio's own reconnect backoff.
"""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from statuspanel.fleet.cuzk_grpc import SERVICE, proto
from statuspanel.fleet.cuzk_grpc.forward import SshForwarder
from statuspanel.fleet.errors import Unreachable, classify
from statuspanel.fleet.shape import Malformed
from statuspanel.fleet.transport import MAX_BYTES, SourceConfig, SshBackend


class Unimplemented(Unreachable):
    """The server answers gRPC but not this method (another service on the port, or an older daemon)."""


def split_target(target: str) -> tuple[str, int]:
    """`HOST:PORT` (IPv6 in brackets) -> (host, port); the form has validated it."""
    host, _, port = target.rpartition(":")
    return host.strip("[]"), int(port)


def public_grpc_target(cfg: SourceConfig) -> str:
    """Where the gRPC API is called, for the panel (no secrets in it)."""
    scheme = "grpcs" if cfg.grpc_tls else "grpc"
    if cfg.transport == "ssh":
        return f"ssh {cfg.ssh_user}@{cfg.ssh_host}:{cfg.ssh_port} -> {scheme}://{cfg.grpc_target}"
    return f"{scheme}://{cfg.grpc_target}"


class GrpcStatusClient:
    """The gRPC half of a source; `await status(max_bytes)`, `await metrics(max_bytes)`, `aclose()`."""

    def __init__(self, cfg: SourceConfig, backend: SshBackend | None = None) -> None:
        self.cfg = cfg
        self.backend = backend            # an ssh source's connection, shared with its HTTP status
        self._channel: Any = None
        self._stubs: Any = None
        self._forwarder: SshForwarder | None = None
        self._max_bytes = MAX_BYTES
        self._answered = False           # a call on this channel answered: it is connected
        self._opening = asyncio.Lock()   # GetStatus and GetMetrics start together: one channel for both
        self.calls = 0

    @property
    def deadline(self) -> float:
        """The read timeout on a channel that has answered (connected), else connect + read timeouts."""
        if self._answered:
            return self.cfg.read_timeout
        return self.cfg.connect_timeout + self.cfg.read_timeout

    async def _open(self, max_bytes: int) -> Any:
        async with self._opening:
            if self._channel is None or max_bytes != self._max_bytes:
                await self._drop_channel()
                await self._dial(max_bytes)
            return self._stubs

    async def _dial(self, max_bytes: int) -> None:
        grpc, _, _ = proto()
        cfg = self.cfg
        interval_ms = int(cfg.interval_secs * 1000)
        options = [
            ("grpc.max_receive_message_length", max_bytes),
            ("grpc.max_send_message_length", 64 * 1024),
            ("grpc.enable_retries", 0),
            ("grpc.enable_http_proxy", 0),    # as httpx's trust_env=False: no proxy from the environment
            ("grpc.primary_user_agent", "vastmanager-fleet"),
            ("grpc.initial_reconnect_backoff_ms", max(interval_ms, 200)),
            ("grpc.min_reconnect_backoff_ms", int(cfg.connect_timeout * 1000)),
            ("grpc.max_reconnect_backoff_ms", int(min(30.0, 8 * cfg.interval_secs) * 1000)),
        ]
        if cfg.transport == "ssh":
            host, port = split_target(cfg.grpc_target)
            assert self.backend is not None  # an ssh source's client is made with its connection
            self._forwarder = await SshForwarder(self.backend, host, port, cfg.connect_timeout).start()
            options.append(("grpc.default_authority", cfg.grpc_target))
            channel = grpc.insecure_channel(self._forwarder.target, options=options)
        elif cfg.grpc_tls:
            try:
                roots = Path(cfg.grpc_ca_path).expanduser().read_bytes() if cfg.grpc_ca_path else None
            except OSError as exc:  # validated when saved, gone or unreadable since
                raise Unreachable("tls", f"tls: cannot read the CA file {cfg.grpc_ca_path} "
                                         f"({exc.strerror or exc})") from None
            channel = grpc.secure_channel(cfg.grpc_target, grpc.ssl_channel_credentials(roots), options=options)
        else:
            channel = grpc.insecure_channel(cfg.grpc_target, options=options)
        self._channel, self._max_bytes = channel, max_bytes
        # Answers come back as bytes and are decoded here: a corrupt one is `malformed` with the
        # decoder's words (grpcio would log a traceback for each and say only INTERNAL).
        self._stubs = {method: channel.unary_unary(f"/{SERVICE}/{method}", request_serializer=_serialize,
                                                   response_deserializer=None)
                       for method in ("GetStatus", "GetMetrics")}

    async def status(self, max_bytes: int = MAX_BYTES) -> bytes:
        """The daemon's GetStatusResponse, encoded (`parse` decodes it: off the loop when large)."""
        _, pb, _ = proto()
        return await self._unary("GetStatus", pb.GetStatusRequest(), max_bytes)

    async def metrics(self, max_bytes: int = MAX_BYTES) -> bytes:
        """The daemon's GetMetricsResponse, encoded."""
        _, pb, _ = proto()
        return await self._unary("GetMetrics", pb.GetMetricsRequest(), max_bytes)

    async def _unary(self, method: str, request: Any, max_bytes: int) -> bytes:
        stubs = await self._open(max_bytes)
        answer: bytes = await self._call(method, stubs[method], request)
        return answer

    async def _call(self, method: str, multicallable: Any, request: Any) -> Any:
        loop = asyncio.get_running_loop()
        settled: asyncio.Future[Any] = loop.create_future()

        def done(call: Any) -> None:  # in a grpcio thread
            with contextlib.suppress(RuntimeError):  # the loop closed: the process is exiting
                loop.call_soon_threadsafe(_settle, settled, call)

        self.calls += 1
        deadline = self.deadline
        call = multicallable.future(request, timeout=deadline)
        call.add_done_callback(done)
        try:
            await asyncio.wait_for(settled, deadline + 1.0)
        except asyncio.TimeoutError:
            call.cancel()
            raise Unreachable("timeout", f"timeout: no answer to {method} within {deadline:g} s") from None
        except asyncio.CancelledError:
            call.cancel()
            raise
        error = call.exception()
        if error is None:
            self._answered = True
            return call.result()
        raise self._failure(method, error, deadline)

    def _failure(self, method: str, error: Any, deadline: float) -> Unreachable | Malformed:
        """What a failed call means: the gRPC status code (and grpcio's details) in the panel's reasons."""
        grpc, _, _ = proto()
        code = error.code() if hasattr(error, "code") else None
        details = str(error.details() if hasattr(error, "details") else error) or ""
        short = details if len(details) <= 200 else details[:197] + "..."
        text = details.lower()
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return Unreachable("timeout", f"timeout: no answer to {method} within {deadline:g} s")
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in text:
            return Malformed(f"too large: the {method} answer is over the {self._max_bytes} byte cap ({short})",
                             reason="too-large")
        if code == grpc.StatusCode.UNIMPLEMENTED:
            return Unimplemented("grpc", f"grpc: UNIMPLEMENTED: the server has no /{SERVICE}/{method} "
                                       "(not a cuzk daemon's gRPC port?)")
        if code == grpc.StatusCode.UNAUTHENTICATED:
            return Unreachable("unauthorized", f"unauthorized: {method} was refused ({short})")
        if code == grpc.StatusCode.PERMISSION_DENIED:
            return Unreachable("forbidden", f"forbidden: {method} was refused ({short})")
        if code == grpc.StatusCode.UNAVAILABLE:
            if self._forwarder is not None and self._forwarder.last_error is not None:
                return classify(self._forwarder.last_error, timeout_secs=self.cfg.connect_timeout)
            return _unavailable(short, text)
        name = code.name if code is not None else type(error).__name__
        return Unreachable("grpc", f"grpc: {name}: {short}")

    async def _drop_channel(self) -> None:
        channel, self._channel, self._stubs = self._channel, None, None
        self._answered = False
        if channel is not None:
            channel.close()
        forwarder, self._forwarder = self._forwarder, None
        if forwarder is not None:
            await forwarder.aclose()

    async def reset(self) -> None:
        """Drop the channel after a failure: the next call dials afresh."""
        await self._drop_channel()

    async def aclose(self) -> None:
        await self._drop_channel()


def parse(method: str, body: bytes) -> Any:
    """`body` decoded as `method`'s response message, or `malformed` (`not-protobuf`) in the decoder's words."""
    _, pb, _ = proto()
    from google.protobuf.message import DecodeError  # loaded with the stubs: only where gRPC sources exist

    response_type = {"GetStatus": pb.GetStatusResponse, "GetMetrics": pb.GetMetricsResponse}[method]
    response = response_type()
    try:
        response.ParseFromString(body)
    except DecodeError as exc:  # both protobuf implementations raise it
        raise Malformed(f"not protobuf: the {method} answer is no {response_type.__name__} ({str(exc)[:120]})",
                        reason="not-protobuf") from None
    return response


def _serialize(message: Any) -> bytes:
    data: bytes = message.SerializeToString()
    return data


def _settle(settled: asyncio.Future[Any], call: Any) -> None:
    if not settled.done():
        settled.set_result(call)


def _unavailable(short: str, text: str) -> Unreachable:
    """UNAVAILABLE, told apart by grpcio's details (it has no finer code for these)."""
    if "dns" in text or "resolv" in text or "lookup" in text or "domain name not found" in text:
        return Unreachable("dns", f"dns: name not resolved ({short})")
    if "ssl" in text or "tls" in text or "handshake" in text or "certificate" in text:
        return Unreachable("tls", f"tls: {short}")
    if "connection refused" in text:
        return Unreachable("refused", "refused: connection refused")
    if "reset" in text or "socket closed" in text or "connection closed" in text or "end of file" in text:
        return Unreachable("network", f"network: the connection closed mid-answer ({short})")
    return Unreachable("network", f"network: {short}")
