"""A cuzk source with a gRPC target: its clients (gRPC, and HTTP when `status_listen` is polled too)
and one poll, which asks both at once and makes one engine of the answers.

Both halves share the source's bounds (deadline, size cap) and, over SSH, one SSH connection. A
poll is good only when every configured half answered: otherwise the source is unreachable or
malformed with the failing half named in the error (`gRPC GetStatus: timeout: ...`), and the last
good snapshot stays, greyed, as for an HTTP source. GetMetrics is asked only without the HTTP status,
whose counters already hold the proofs per kind.
"""
from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator, cast

import httpx

from statuspanel.fleet.bounds import SourceLimits
from statuspanel.fleet.cuzk_grpc.adapt import (
    adapt_status,
    check_entry_counts,
    grpc_only_snapshot,
    merge,
    message_dict,
    metrics_by_kind,
)
from statuspanel.fleet.cuzk_grpc.channel import GrpcStatusClient, Unimplemented, parse
from statuspanel.fleet.errors import Unreachable
from statuspanel.fleet.poller import decode
from statuspanel.fleet.shape import Malformed
from statuspanel.fleet.transport import SourceConfig, SshBackend, fetch, make_client

if TYPE_CHECKING:
    from gpu_engine.schema import SourceSnapshot

# Answers up to this size (both halves) are decoded in place, larger ones in the collector's thread
# pool: a message near the size cap takes seconds to adapt and must not hold the collector's loop.
INLINE_DECODE_BYTES = 64 * 1024


class CuzkGrpcSource:
    """The clients of one source (`aclose()` closes them); `busy_since` dates the workers' jobs."""

    def __init__(self, cfg: SourceConfig, on_pin: Callable[[str], None] | None = None) -> None:
        backend = SshBackend(cfg, on_pin) if cfg.transport == "ssh" else None
        self.http: httpx.AsyncClient | None = make_client(cfg, on_pin, backend) if cfg.has_http else None
        self.grpc = GrpcStatusClient(cfg, backend)
        self.backend = backend
        self.busy_since: dict[tuple[int, str], float] = {}

    async def aclose(self) -> None:
        await self.grpc.aclose()
        if self.http is not None:
            await self.http.aclose()
        elif self.backend is not None:
            await self.backend.aclose()


async def poll(client: CuzkGrpcSource, cfg: SourceConfig, max_bytes: int, max_depth: int,
               in_thread: Callable[..., Awaitable[Any]], limits: SourceLimits | None = None) -> SourceSnapshot:
    """One poll of the source: the panel snapshot, or Unreachable / Malformed naming the half."""
    halves: list[tuple[str, Awaitable[Any]]] = [("gRPC GetStatus", client.grpc.status(max_bytes))]
    if client.http is not None:
        halves.append(("HTTP /status", fetch(client.http, cfg, max_bytes)))
    else:
        halves.append(("gRPC GetMetrics", client.grpc.metrics(max_bytes)))
    results = await asyncio.gather(*(h for _, h in halves), return_exceptions=True)
    if client.http is None and isinstance(results[1], Unimplemented) and not isinstance(results[0], BaseException):
        results[1] = None  # a daemon without GetMetrics: its totals still come from GetStatus
    failures = [(name, r) for (name, _), r in zip(halves, results) if isinstance(r, BaseException)]
    if any(isinstance(r, Unreachable) and name.startswith("gRPC") for name, r in failures):
        await client.grpc.reset()  # after every call settled: the next poll dials afresh
    for _, r in failures:
        if not isinstance(r, (Unreachable, Malformed)):
            raise r
    if client.http is None and failures and failures[0][0] == "gRPC GetStatus":
        failures = failures[:1]  # GetMetrics failing on the same channel says nothing more
    if failures:
        _raise_named(failures)
    # every failure was raised above: what is left are the answers' bytes (None: no GetMetrics)
    status_body, second = cast(bytes, results[0]), cast("bytes | None", results[1])
    answer_bytes = len(status_body) + (len(second) if second is not None else 0)
    if answer_bytes <= INLINE_DECODE_BYTES:  # a status message is a few hundred bytes: no thread hop
        return decode_answers(status_body, second, client.http is not None, client.busy_since, cfg, max_depth,
                              limits)
    snap: SourceSnapshot = await in_thread(decode_answers, status_body, second, client.http is not None,
                                           client.busy_since, cfg, max_depth, limits)
    return snap


def decode_answers(status_body: bytes, second: bytes | None, with_http: bool,
                   busy_since: dict[tuple[int, str], float], cfg: SourceConfig, max_depth: int,
                   limits: SourceLimits | None = None) -> SourceSnapshot:
    """The snapshot from GetStatus's bytes and the second answer's (the HTTP status document, or
    GetMetrics' bytes, or None for a daemon without GetMetrics): Malformed naming the half otherwise."""
    with _named("gRPC GetStatus"):
        status = parse("GetStatus", status_body)
        check_entry_counts(status)
        part = adapt_status(message_dict(status), busy_since, time.monotonic())
    if not with_http:
        with _named("gRPC GetMetrics"):
            by_kind = None if second is None else metrics_by_kind(parse("GetMetrics", second).prometheus_text)
        return grpc_only_snapshot(part, by_kind)
    with _named("HTTP /status"):
        assert second is not None  # the HTTP half answers bytes or fails (raised in poll)
        http_snap = decode(second, cfg.kind, max_depth, limits)  # the HTTP half's per-source bounds
    return merge(http_snap, part)


@contextlib.contextmanager
def _named(half: str) -> Iterator[None]:
    """A Malformed raised inside says which half of the source it comes from."""
    try:
        yield
    except Malformed as exc:
        raise Malformed(f"{half}: {exc}", field=exc.field, reason=exc.reason) from None


def _raise_named(failures: list[tuple[str, BaseException]]) -> None:
    """The first failure, its message prefixed with the half that failed (and the other's, if any)."""
    message = "; ".join(f"{name}: {exc}" for name, exc in failures)
    first = failures[0][1]
    if isinstance(first, Malformed):
        raise Malformed(message, field=first.field, reason=first.reason)
    assert isinstance(first, Unreachable)  # poll raised every failure that is neither
    raise Unreachable(first.reason, message)
