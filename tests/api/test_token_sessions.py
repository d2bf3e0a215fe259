"""A session made by a token login is bound to that token: a new token logs it out (pages, API and
the WebSocket alike); sessions of password users are not touched."""
from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as dj_settings
from django.contrib.auth import get_user_model
from django.test import Client

from statuspanel import auth
from tests.credentials import TOKEN
from tests.panel.helpers import ORIGIN, communicator

NEW_TOKEN = "a-brand-new-token-0123456789"


def _token_login() -> Client:
    client = Client()
    response = client.get(f"/login?token={TOKEN}")
    assert response.status_code == 302
    return client


@pytest.mark.django_db
def test_session_stores_a_digest_not_the_token():
    client = _token_login()
    digest = client.session[auth.SESSION_TOKEN_KEY]
    assert digest == auth.token_digest(TOKEN) and TOKEN not in digest


@pytest.mark.django_db
def test_new_token_logs_old_sessions_out(settings):
    client = _token_login()
    assert client.get("/").status_code == 200
    assert client.get("/api/jobs").status_code == 200
    settings.VASTMANAGER_TOKEN = NEW_TOKEN
    assert client.get("/api/jobs").status_code == 401
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith(dj_settings.LOGIN_URL)
    settings.VASTMANAGER_TOKEN = TOKEN  # the old token back: the session was ended, not suspended
    assert client.get("/api/jobs").status_code == 401


@pytest.mark.django_db
def test_service_user_session_without_digest_is_ended():
    client = Client()
    client.force_login(auth.service_user())  # a session as an older version made it
    assert client.get("/api/jobs").status_code == 401


@pytest.mark.django_db
def test_password_sessions_survive_a_token_change(settings):
    user = get_user_model().objects.create_user("op", password="pw-for-tests-1")
    client = Client()
    client.force_login(user)
    settings.VASTMANAGER_TOKEN = NEW_TOKEN
    assert client.get("/api/jobs").status_code == 200


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_websocket_refuses_a_session_of_an_old_token(settings):
    client = await sync_to_async(_token_login)()
    cookie = (b"cookie", f"{dj_settings.SESSION_COOKIE_NAME}={client.cookies[dj_settings.SESSION_COOKIE_NAME].value}"
              .encode())
    comm = communicator("/ws/status/", [ORIGIN, cookie])
    assert (await comm.connect())[0]
    await comm.disconnect()
    settings.VASTMANAGER_TOKEN = NEW_TOKEN
    comm = communicator("/ws/status/", [ORIGIN, cookie])
    assert not (await comm.connect())[0]
    await comm.disconnect()
