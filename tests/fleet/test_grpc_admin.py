"""A cuzk gRPC source in the admin: its fields in a section of their own, saved through the same form
as `addsource --grpc`, and a bad target named without saving."""
from __future__ import annotations

import pytest

from statuspanel.models import Source
from tests.fleet.conftest import source_form

pytestmark = pytest.mark.django_db

ADD = "/admin/statuspanel/source/add/"


def _form(**overrides: str) -> dict[str, str]:
    return source_form(**{"name": "gpu-box", "grpc_target": "10.0.0.9:9820", **overrides})


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
