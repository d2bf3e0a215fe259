"""Which page origins may open the WebSocket with the user's session: scheme, host and port.

A browser sends the page's origin with every WebSocket handshake, and the session cookie with it:
the cookie alone does not say the page is ours. Admitted are the server's own origin (the scheme
the connection arrived on, and the Host it was addressed to, which must be in ALLOWED_HOSTS) and
the extra origins of `TRUSTED_ORIGINS`, which are also Django's CSRF_TRUSTED_ORIGINS: the stream and
the session POSTs trust the same pages. A page on another port of the same host is another origin.
"""
from __future__ import annotations

from typing import Any, NamedTuple
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}


class Origin(NamedTuple):
    scheme: str
    host: str  # lower case; IPv6 in brackets
    port: int


def parse_origin(text: str) -> Origin | None:
    """`scheme://host[:port]` (nothing else: no path, user or query), or None."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    if parts.username or parts.password or parts.query or parts.fragment:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    return Origin(scheme, host, port if port is not None else DEFAULT_PORTS[scheme])


def parse_trusted(entries: list[str], name: str = "TRUSTED_ORIGINS") -> list[str]:
    """Check a setting's list of origins at startup (a wildcard `*.` host is allowed, as for CSRF)."""
    for entry in entries:
        if parse_origin(entry.replace("://*.", "://wildcard.", 1)) is None:
            raise ImproperlyConfigured(f"{name}: {entry!r} is not an origin such as https://panel.example.com:8443")
    return entries


def _trusted(origin: Origin) -> bool:
    for entry in getattr(settings, "TRUSTED_ORIGINS", []):
        if "://*." in entry:
            trusted = parse_origin(entry.replace("://*.", "://", 1))
            if trusted and (origin.scheme, origin.port) == (trusted.scheme, trusted.port) and (
                    origin.host == trusted.host or origin.host.endswith("." + trusted.host)):
                return True
        elif parse_origin(entry) == origin:
            return True
    return False


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def own_origin(scope: dict[str, Any]) -> Origin | None:
    """The origin this connection was addressed to, or None when its Host is not one of ALLOWED_HOSTS."""
    scheme = "https" if scope.get("scheme") in ("wss", "https") else "http"
    host_header = _header(scope, b"host")
    if host_header is None:
        server = scope.get("server") or (None, None)
        if not server[0]:
            return None
        host_header = f"{server[0]}:{server[1]}" if server[1] else str(server[0])
    domain, port = split_domain_port(host_header.lower())
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return None
    if port and not port.isdigit():
        return None
    return Origin(scheme, domain, int(port) if port else DEFAULT_PORTS[scheme])


def origin_allowed(scope: dict[str, Any]) -> bool:
    raw = _header(scope, b"origin")
    origin = parse_origin(raw) if raw else None
    if origin is None:
        return False
    own = own_origin(scope)
    return (own is not None and origin == own) or _trusted(origin)


class OriginCheck:
    """ASGI middleware refusing WebSocket handshakes whose Origin is not admitted (403 before accept).

    Settings are read per connection, not when the application is built."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            from channels.security.websocket import WebsocketDenier

            return await WebsocketDenier()(scope, receive, send)
        return await self.app(scope, receive, send)
