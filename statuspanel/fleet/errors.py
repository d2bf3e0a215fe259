"""Why a poll failed, in the panel's words: `Unreachable(reason, message)` from any transport error.

Reasons are `UNREACHABLE_REASONS` (gpu_engine/vocabulary.py): refused, timeout, dns, tls,
unauthorized (401), forbidden (403), http (another status), ssh (authentication, host key, a
channel the server refused), network (anything else on the way), blocked (a link-local or
metadata target, statuspanel/fleet/targets.py). Messages never carry secrets:
source URLs hold no credentials (the form refuses them) and tokens travel only in headers.
"""
from __future__ import annotations

import asyncio
import errno
import socket
import ssl

import httpcore
import httpx


class Unreachable(Exception):
    """The source did not answer with a status document; `reason` is one of UNREACHABLE_REASONS."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _chain(first: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    exc: BaseException | None = first
    while exc is not None and exc not in seen and len(seen) < 10:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _short(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def classify(exc: BaseException, *, timeout_secs: float | None = None) -> Unreachable:
    """The Unreachable that says what went wrong with `exc` (an httpx, httpcore, asyncssh or OS error)."""
    if isinstance(exc, Unreachable):
        return exc
    chain = _chain(exc)
    if any(isinstance(e, (httpx.TimeoutException, httpcore.TimeoutException, asyncio.TimeoutError, TimeoutError))
           for e in chain):
        within = f" within {timeout_secs:g} s" if timeout_secs else ""
        connecting = any(isinstance(e, (httpx.ConnectTimeout, httpcore.ConnectTimeout)) for e in chain)
        return Unreachable("timeout", f"timeout: no {'connection' if connecting else 'answer'}{within}")
    for e in chain:
        if isinstance(e, socket.gaierror):
            return Unreachable("dns", f"dns: name not resolved ({_short(e)})")
        if isinstance(e, ssl.SSLError):
            return Unreachable("tls", f"tls: {_short(e)}")
        if isinstance(e, ConnectionRefusedError) or getattr(e, "errno", None) == errno.ECONNREFUSED:
            return Unreachable("refused", "refused: connection refused")
    ssh = _ssh_reason(chain)
    if ssh is not None:
        return ssh
    text = " ".join(_short(e) for e in chain).lower()
    if "name or service not known" in text or "nodename nor servname" in text or "temporary failure in name" in text:
        return Unreachable("dns", f"dns: name not resolved ({_short(exc)})")
    if "certificate" in text or "ssl" in text or "tls" in text:
        return Unreachable("tls", f"tls: {_short(exc)}")
    if "connection refused" in text:
        return Unreachable("refused", "refused: connection refused")
    if isinstance(exc, (httpx.RemoteProtocolError, httpcore.RemoteProtocolError)):
        return Unreachable("network", f"network: the connection closed mid-answer ({_short(exc)})")
    return Unreachable("network", f"network: {_short(exc)}")


def _ssh_reason(chain: list[BaseException]) -> Unreachable | None:
    try:
        import asyncssh
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    for e in chain:
        if isinstance(e, asyncssh.HostKeyNotVerifiable):
            return Unreachable("ssh", f"ssh: host key not verifiable ({_short(e)})")
        if isinstance(e, asyncssh.PermissionDenied):
            return Unreachable("ssh", "ssh: permission denied (key refused)")
        if isinstance(e, asyncssh.ChannelOpenError):
            # the remote sshd could not reach the status port: refused there
            if "refused" in str(e).lower() or e.code == asyncssh.OPEN_CONNECT_FAILED:
                return Unreachable("refused", f"refused: the status port behind ssh ({_short(e)})")
            return Unreachable("ssh", f"ssh: channel refused ({_short(e)})")
        if isinstance(e, asyncssh.Error):
            return Unreachable("ssh", f"ssh: {_short(e)}")
    return None


def http_status(code: int) -> Unreachable:
    if code == 401:
        return Unreachable("unauthorized", "401: the token was refused (unauthorized)")
    if code == 403:
        return Unreachable("forbidden", "403: forbidden")
    return Unreachable("http", f"http: status {code}")
