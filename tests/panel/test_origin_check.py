"""/ws/status/ admits only the server's own origin (scheme, host and port) and TRUSTED_ORIGINS.

A page on another port of the same host is another web application: it may not open the stream
with the user's session (the old check compared host names only)."""
from __future__ import annotations

import pytest

from tests.credentials import TOKEN
from tests.panel.helpers import communicator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("api_token", "clean_panel_cache")]


async def _admitted(origin: bytes, host: bytes = b"localhost:8000", scope_scheme: str | None = None) -> bool:
    comm = communicator(f"/ws/status/?token={TOKEN}", [(b"host", host), (b"origin", origin)])
    if scope_scheme:
        comm.scope["scheme"] = scope_scheme
    connected, _ = await comm.connect()
    await comm.disconnect()
    return connected


@pytest.mark.asyncio
async def test_own_origin_is_admitted():
    assert await _admitted(b"http://localhost:8000")


@pytest.mark.asyncio
@pytest.mark.parametrize("origin", [
    b"http://localhost:8001",      # another app on the same host
    b"http://localhost",           # port 80 is another origin than 8000
    b"https://localhost:8000",     # another scheme
    b"http://127.0.0.1:8000",      # another host name (also allowed, but not where this page came from)
    b"null",
    b"http://localhost:8000/path",
])
async def test_other_origins_are_refused(origin):
    assert not await _admitted(origin)


@pytest.mark.asyncio
async def test_default_port_matches_a_host_without_port():
    assert await _admitted(b"http://localhost", host=b"localhost")
    assert not await _admitted(b"http://localhost:8000", host=b"localhost")


@pytest.mark.asyncio
async def test_secure_connection_expects_https_origin():
    assert await _admitted(b"https://localhost:8443", host=b"localhost:8443", scope_scheme="wss")
    assert not await _admitted(b"http://localhost:8443", host=b"localhost:8443", scope_scheme="wss")


@pytest.mark.asyncio
async def test_host_outside_allowed_hosts_is_refused():
    assert not await _admitted(b"http://evil.example:8000", host=b"evil.example:8000")


@pytest.mark.asyncio
async def test_trusted_origins_are_admitted(settings):
    settings.TRUSTED_ORIGINS = ["https://panel.example.com", "https://*.ops.example.com:8443"]
    assert await _admitted(b"https://panel.example.com")
    assert await _admitted(b"https://a.ops.example.com:8443")
    assert not await _admitted(b"https://a.ops.example.com")
    assert not await _admitted(b"http://panel.example.com")


def test_csrf_trusts_the_same_origins():
    from django.conf import settings

    assert settings.CSRF_TRUSTED_ORIGINS is settings.TRUSTED_ORIGINS


def test_malformed_trusted_origin_refuses_to_start():
    from django.core.exceptions import ImproperlyConfigured

    from vastmanager.origins import parse_trusted

    with pytest.raises(ImproperlyConfigured, match="not an origin"):
        parse_trusted(["panel.example.com"])
    assert parse_trusted(["https://*.example.com", "http://[::1]:8000"])
