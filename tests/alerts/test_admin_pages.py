"""The alerts' admin pages render: the history with its filters, rule settings, notifiers (their URL
and secret never rendered back) and deliveries with their attempts; a bad notifier is refused there
with the same reason as on the command line."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from statuspanel.alerts.models import Alert, Delivery, DeliveryAttempt, Notifier
from tests.alerts.conftest import SECRET

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "x" * 20))
    return client


def test_the_admin_pages_render_without_secrets(admin_client) -> None:
    call_command("addnotifier", "hook", "--kind", "webhook", "--url", "https://hooks.example.com/T0K3N",
                 "--secret", SECRET)
    now = timezone.now()
    Alert.objects.create(rule="source-down", engine="box-1", subject="box-1", severity="critical", state="firing",
                         message="source box-1 unreachable", started_at=now, last_seen_at=now, fired_at=now)
    delivery = Delivery.objects.create(notifier=Notifier.objects.get(), notifier_name="hook", created_at=now)
    DeliveryAttempt.objects.create(delivery=delivery, number=1, at=now, ok=False, status=500, error="HTTP 500",
                                   duration_ms=3.0)
    pages = ["/admin/alerts/alert/?rule__exact=source-down&state__exact=firing", "/admin/alerts/rulesetting/add/",
             "/admin/alerts/ruleoverride/add/", "/admin/alerts/notifier/",
             f"/admin/alerts/notifier/{Notifier.objects.get().id}/change/", "/admin/alerts/delivery/",
             f"/admin/alerts/delivery/{delivery.id}/change/"]
    for page in pages:
        answer = admin_client.get(page)
        assert answer.status_code == 200, page
        body = answer.content.decode()
        assert "T0K3N" not in body and SECRET not in body, page
    assert "HTTP 500" in admin_client.get(f"/admin/alerts/delivery/{delivery.id}/change/").content.decode()


def test_the_admin_refuses_a_bad_notifier_with_the_reason(admin_client) -> None:
    answer = admin_client.post("/admin/alerts/notifier/add/", {"name": "bad", "kind": "webhook",
                                                               "url": "gopher://x.example.com/", "enabled": "on"})
    assert answer.status_code == 200 and "must start with http:// or https://" in answer.content.decode()
    assert not Notifier.objects.exists()
