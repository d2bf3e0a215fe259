"""The panel page's first paint: no alert, no strip (the page as before); firing alerts drawn whole
in the strip with the CSRF token and the API path the buttons use, and alerts.js loaded."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from statuspanel.alerts.evaluator import Evaluator
from statuspanel.alerts.panel import acknowledge, firing_alerts
from tests.alerts.conftest import Feed, source_snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def user_client() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_user("dora", password="x" * 20))
    return client


def test_without_alerts_the_strip_is_not_drawn(user_client) -> None:
    body = user_client.get("/").content.decode()
    assert 'id="alerts" class="alert-strip" hidden' in body
    assert "statuspanel/alerts.js" in body and "No alert is firing" in body


def test_firing_alerts_are_drawn_with_what_the_buttons_need(user_client) -> None:
    from django.core.management import call_command

    call_command("setalertrule", "source-down", "--for", "0")
    name = "box-with-a-rather-long-name-that-must-never-be-cut-0123456789"
    evaluator = Evaluator(snapshots=Feed())
    evaluator.snapshots.snaps = [source_snapshot(name, "unreachable")]
    assert evaluator.lease.acquire_or_renew()
    evaluator.evaluate_once()
    acknowledge(firing_alerts()[0]["id"], "dora")
    body = user_client.get("/").content.decode()
    assert 'id="alerts" class="alert-strip" aria-label' in body  # not hidden
    assert f'data-engine="{name}"' in body and f">{name}</a>" in body
    assert "acknowledged by <b>dora</b>" in body
    assert 'data-api-base="/api/alerts"' in body
    csrf = body.split('data-csrf="', 1)[1].split('"', 1)[0]
    assert len(csrf) >= 32
