"""The admin's Circuits -> Add is held to the circuit body limit (CIRCUIT_MAX_BODY), not the 1 MiB
default: against the real server, a logged-in admin's 5 MiB upload reaches the registration form
(which answers about the file), while the same body on another admin page is still refused 413."""
from __future__ import annotations

import re

import httpx
import pytest

from tests.credentials import TOKEN
from tests.process_support import ServedSite

ADD = "/admin/gpu_engine/circuit/add/"
PASSWORD = "pw-admin-123456"


@pytest.fixture
def served(tmp_path):
    site = ServedSite(tmp_path / "site", TOKEN)
    site.manage("shell", "-c", "from django.contrib.auth import get_user_model; "
                f"get_user_model().objects.create_superuser('admin', 'a@example.com', '{PASSWORD}')")
    site.start("servepanel")
    try:
        yield site
    finally:
        site.stop()


def _csrf(client: httpx.Client, path: str) -> str:
    page = client.get(path)
    assert page.status_code == 200, page.status_code
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)


def test_a_5_mib_admin_upload_reaches_the_registration_form(served):
    with httpx.Client(base_url=served.base, timeout=60, follow_redirects=True) as client:
        token = _csrf(client, "/admin/login/")
        login = client.post("/admin/login/?next=/admin/", data={"csrfmiddlewaretoken": token, "username": "admin",
                                                               "password": PASSWORD})
        assert login.status_code == 200 and "Log out" in login.text
        token = _csrf(client, ADD)
        zkey = b"\0" * (5 << 20)
        answer = client.post(ADD, data={"csrfmiddlewaretoken": token, "name": "big", "label": ""},
                             files={"zkey": ("big.zkey", zkey, "application/octet-stream")},
                             headers={"Referer": served.base + ADD})
        assert answer.status_code == 200, answer.text[:500]
        assert "errorlist" in answer.text and "zkey" in answer.text  # the form's own answer about the file
        other = client.post("/admin/gpu_engine/proofjob/", data={"csrfmiddlewaretoken": token},
                            files={"zkey": ("big.zkey", zkey, "application/octet-stream")},
                            headers={"Referer": served.base + ADD})
        assert other.status_code == 413
