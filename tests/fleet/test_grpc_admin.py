"""A cuzk gRPC source in the admin: its fields in a section of their own, saved through the same form
as `addsource --grpc`, and a bad target named without saving."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from statuspanel.models import Source

pytestmark = pytest.mark.django_db

ADD = "/admin/statuspanel/source/add/"


@pytest.fixture
def admin_client(client):
    user = get_user_model().objects.create_superuser("ops", "ops@example.net", "a-long-password-1")
    client.force_login(user)
    return client


def _form(**overrides) -> dict:
    data = {"name": "gpu-box", "kind": "cuzk", "transport": "http", "url": "", "grpc_target": "10.0.0.9:9820",
            "ssh_port": "22", "known_hosts_policy": "pin", "interval_secs": "1.5", "enabled": "on",
            "events-TOTAL_FORMS": "0", "events-INITIAL_FORMS": "0", "events-MIN_NUM_FORMS": "0",
            "events-MAX_NUM_FORMS": "0"}
    data.update(overrides)
    return data


def test_a_grpc_only_source_is_added_in_the_admin(admin_client) -> None:
    page = admin_client.get(ADD).content.decode()
    assert "cuzk gRPC" in page and 'name="grpc_target"' in page and 'name="grpc_tls"' in page
    response = admin_client.post(ADD, _form())
    assert response.status_code == 302, response.content.decode()[-3000:]
    source = Source.objects.get(name="gpu-box")
    assert (source.grpc_target, source.url, source.grpc_tls) == ("10.0.0.9:9820", "", False)
    assert "grpc://10.0.0.9:9820" in admin_client.get("/admin/statuspanel/source/").content.decode()


def test_a_bad_grpc_target_is_named_and_not_saved(admin_client) -> None:
    response = admin_client.post(ADD, _form(grpc_target="10.0.0.9:99999"))
    assert response.status_code == 200
    assert "gRPC port must be a number from 1 to 65535" in response.content.decode()
    assert not Source.objects.exists()
