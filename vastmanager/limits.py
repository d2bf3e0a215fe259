"""How large a request body each path may carry, and the one answer to a body over it.

`path_limits()` maps exact paths to their own limit; every other path gets `MAX_REQUEST_BYTES`.
A path's own (larger) limit is granted by who asks: only a request whose headers carry the operator's
token (`Authorization: Bearer`) gets it; everyone else is held to `MAX_REQUEST_BYTES` there too, so an
unauthenticated client cannot make the server buffer a circuit-sized body only to be answered 401
(the server decides when the headers end, before one body byte is read; a session cannot be checked
there without the database, so a browser session submits at most `MAX_REQUEST_BYTES`).
Two places apply the same limits:
- the server (`vastmanager.server`) refuses from `Content-Length` before reading the body, and cuts
  a chunked body off at the limit, so nothing over the limit is ever buffered;
- `BodyLimitMiddleware` (ASGI, in `vastmanager.asgi`) gives the same 413 under any ASGI server,
  where the body may already have been buffered by the server itself.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Awaitable, Callable, Iterable
from urllib.parse import unquote, urlsplit

from django.conf import settings

REFUSED_STATUS = 413


def path_limits() -> dict[str, int]:
    """Exact paths with a body limit of their own (bytes). Paths not listed get `MAX_REQUEST_BYTES`.

    A limit above Django's `DATA_UPLOAD_MAX_MEMORY_SIZE` is refused by the system check
    `vastmanager.E003` (Django would refuse the body itself): raise both together."""
    # Job submission may carry a circom circuit's batch of witnesses or inputs; the view holds
    # built-in kinds to MAX_REQUEST_BYTES itself. The admin's Circuits -> Add uploads a circuit's
    # zkey, wasm, sym and r1cs: the registration form (as `addcircuit`) gets the circuit limit.
    circuit = max(default_limit(), int(settings.CIRCUIT_MAX_BODY))
    return {"/api/jobs": circuit, circuit_admin_add_path(): circuit}


def circuit_admin_add_path() -> str:
    from django.urls import reverse

    return reverse("admin:gpu_engine_circuit_add")


def default_limit() -> int:
    return int(settings.MAX_REQUEST_BYTES)


def limit_for(path: str) -> int:
    """The body limit of `path` (a path, or a raw request target with a query or absolute form): the
    most any request there may carry (`request_limit` says what this request may)."""
    plain = unquote(urlsplit(path).path or "/")
    return path_limits().get(plain, default_limit())


def carries_operator_token(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether these request headers hold `Authorization: Bearer <the operator's token>`."""
    from statuspanel.auth import token_is_valid  # the one token rule; Django apps load after settings

    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            return scheme.lower() == "bearer" and token_is_valid(token.strip())
    return False


_session_reader = ThreadPoolExecutor(1, thread_name_prefix="body-limit-session")


def carries_staff_session(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether these request headers hold the session cookie of a logged-in staff user (the admin's
    uploads). One session read, only for a body over the default limit on a path that allows more."""
    from http.cookies import CookieError, SimpleCookie
    from importlib import import_module

    from django.contrib.auth import get_user_model
    from django.contrib.sessions.backends.base import SessionBase
    from django.db import DatabaseError, connection

    for name, value in headers:
        if name.lower() != b"cookie":
            continue
        try:
            morsel = SimpleCookie(value.decode("latin-1")).get(settings.SESSION_COOKIE_NAME)
        except CookieError:
            return False
        if morsel is None or not morsel.value:
            continue
        def staff(key: str) -> bool:
            store: SessionBase = import_module(settings.SESSION_ENGINE).SessionStore(key)
            user_id = store.get("_auth_user_id")
            found = user_id is not None and get_user_model().objects.filter(
                pk=user_id, is_active=True, is_staff=True).exists()
            connection.close()  # this thread's own connection, never left open
            return found

        # The server asks from its event loop's thread, where Django refuses the ORM: one short read
        # in a thread of its own (rare: a body over the default limit on the admin's upload path).
        try:
            return _session_reader.submit(staff, morsel.value).result(timeout=5)
        except (DatabaseError, ValueError, TimeoutError):
            return False
    return False


def request_limit(path: str, headers: Iterable[tuple[bytes, bytes]]) -> int:
    """The body limit of this request: its path's own limit only with the operator's token (or, for the
    admin's circuit upload, a staff session), else the default (a refusal then comes before the body is
    read, not a 401 after it)."""
    limit = limit_for(path)
    if limit <= default_limit():
        return limit
    headers = list(headers)
    if carries_operator_token(headers):
        return limit
    plain = unquote(urlsplit(path).path or "/")
    if plain == circuit_admin_add_path() and carries_staff_session(headers):
        return limit
    return default_limit()


def refusal_message(limit: int, declared: int | None = None) -> str:
    size = f"a {declared}-byte body" if declared is not None else "a body"
    return f"request body too large: {size} is over this path's limit of {limit} bytes"


def refusal_body(limit: int, declared: int | None = None) -> bytes:
    return json.dumps({"error": refusal_message(limit, declared), "limit": limit}).encode()


def declared_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    """Content-Length from ASGI headers; None when absent or not a plain decimal number."""
    for name, value in headers:
        if name.lower() == b"content-length":
            raw = value.strip()
            return int(raw) if raw.isdigit() else None
    return None


Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]  # a message is a dict; apps may declare Mapping


class BodyLimitMiddleware:
    """Refuse HTTP bodies over the path's limit with a 413 JSON answer, under any ASGI server.

    A declared length over the limit is answered before the body is read from `receive`; a body
    without one is counted while it streams and refused once it crosses the limit."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = request_limit(scope.get("path", "/"), scope.get("headers", []))
        declared = declared_length(scope.get("headers", []))
        if declared is not None and declared > limit:
            await _refuse(send, limit, declared)
            return
        # Read the (bounded) body here, so the application never sees a body over the limit; the
        # chunks are handed on as they came (never joined into a second copy).
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _refuse(send, limit)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        chunks.reverse()  # popped from the end, in order

        async def replay() -> dict[str, Any]:
            if chunks:
                body = chunks.pop()
                return {"type": "http.request", "body": body, "more_body": bool(chunks)}
            return await receive()

        await self.app(scope, replay, send)


async def _refuse(send: Send, limit: int, declared: int | None = None) -> None:
    body = refusal_body(limit, declared)
    await send({"type": "http.response.start", "status": REFUSED_STATUS,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
