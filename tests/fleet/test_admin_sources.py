"""Sources in the admin: the same rules as addsource, the token write-only (never rendered back, kept
when left empty on an edit of the same target, removed on request), state changes listed."""
from __future__ import annotations

import pytest
from django.utils import timezone

from statuspanel.models import Source, SourceEvent
from tests.fleet.conftest import source_form

pytestmark = pytest.mark.django_db

TOKEN = "admin-secret-token-0123456789"
ADD = "/admin/statuspanel/source/add/"


def _form(**overrides: str) -> dict[str, str]:
    return source_form(**{"name": "eng1", "kind": "vastmanager", "url": "http://10.0.0.7:8000", "token": TOKEN,
                          **overrides})


def test_the_token_is_write_only(admin_client) -> None:
    page = admin_client.get(ADD)
    assert page.status_code == 200 and b'type="password"' in page.content
    response = admin_client.post(ADD, _form())
    assert response.status_code == 302, response.content.decode()[-3000:]
    source = Source.objects.get(name="eng1")
    assert source.token == TOKEN
    change = f"/admin/statuspanel/source/{source.pk}/change/"
    for url in (change, "/admin/statuspanel/source/"):
        body = admin_client.get(url).content.decode()
        assert TOKEN not in body
    assert admin_client.post(change, _form(token="", interval_secs="2")).status_code == 302
    source.refresh_from_db()
    assert (source.interval_secs, source.token) == (2.0, TOKEN)   # empty keeps it (same target)
    assert admin_client.post(change, _form(kind="cuzk", token="", clear_token="on")).status_code == 302
    source.refresh_from_db()
    assert source.token == ""


def test_the_admin_refuses_what_addsource_refuses(admin_client) -> None:
    response = admin_client.post(ADD, _form(url="ftp://10.0.0.7/status"))
    assert response.status_code == 200
    assert "http:// or https://" in response.content.decode()
    response = admin_client.post(ADD, _form(token=""))
    assert "needs a token" in response.content.decode()
    assert not Source.objects.exists()


def test_state_changes_are_listed(admin_client) -> None:
    source = Source.objects.create(name="box", kind="cuzk", url="http://h:1")
    SourceEvent.objects.create(source=source, source_name="box", at=timezone.now(), previous="online",
                               state="unreachable", reason="timeout", error="timeout: no answer within 3 s")
    body = admin_client.get(f"/admin/statuspanel/source/{source.pk}/change/").content.decode()
    assert "timeout: no answer within 3 s" in body
    body = admin_client.get("/admin/statuspanel/sourceevent/").content.decode()
    assert "unreachable" in body and "box" in body
