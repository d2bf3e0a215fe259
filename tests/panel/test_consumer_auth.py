"""/ws/status/ refuses anonymous and foreign-origin connections; admits the token and a session."""
from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as dj_settings
from django.contrib.auth import get_user_model
from django.test import Client

from tests.credentials import TOKEN
from tests.panel.helpers import ORIGIN, communicator

pytestmark = pytest.mark.usefixtures("api_token", "clean_panel_cache")


async def _connect(path: str, headers: list[tuple[bytes, bytes]]):
    comm = communicator(path, headers)
    connected, _code = await comm.connect()
    return comm, connected


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_refused_without_auth():
    comm, connected = await _connect("/ws/status/", [ORIGIN])
    assert not connected
    await comm.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_refused_with_wrong_token():
    comm, connected = await _connect("/ws/status/?token=nope", [ORIGIN])
    assert not connected
    await comm.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("origin", [b"http://evil.example", b"http://localhost.evil.example"])
async def test_refused_with_foreign_origin(origin):
    comm, connected = await _connect(f"/ws/status/?token={TOKEN}", [(b"origin", origin)])
    assert not connected
    await comm.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_refused_without_origin_header():
    comm, connected = await _connect(f"/ws/status/?token={TOKEN}", [])
    assert not connected
    await comm.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_token_admits():
    comm, connected = await _connect(f"/ws/status/?token={TOKEN}", [ORIGIN])
    assert connected
    await comm.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_unknown_format_is_refused():
    comm, connected = await _connect(f"/ws/status/?token={TOKEN}&format=xml", [ORIGIN])
    assert not connected
    await comm.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_session_admits():
    def login_cookie() -> str:
        user = get_user_model().objects.create_user("viewer", password="pw-for-test-only")
        client = Client()
        client.force_login(user)
        return client.cookies[dj_settings.SESSION_COOKIE_NAME].value

    cookie = await sync_to_async(login_cookie)()
    header = (b"cookie", f"{dj_settings.SESSION_COOKIE_NAME}={cookie}".encode())
    comm, connected = await _connect("/ws/status/", [ORIGIN, header])
    assert connected
    await comm.disconnect()
