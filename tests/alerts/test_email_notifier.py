"""An email notifier delivers through Django's SMTP backend to a real SMTP server (aiosmtpd)."""
from __future__ import annotations

import email

import pytest
from django.core.management import call_command

from statuspanel.alerts.models import Delivery
from tests.alerts.conftest import Feed, source_snapshot
from tests.alerts.receivers import SmtpReceiver
from tests.fleet.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def smtp(settings):
    with SmtpReceiver() as server:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
        settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
        settings.ALERTS_EMAIL_FROM = "alerts@panel.example"
        yield server


def test_firing_and_resolution_arrive_as_emails(running_evaluator, smtp) -> None:
    call_command("addnotifier", "ops", "--kind", "email", "--to", "ops@example.com", "--to", "oncall@example.com")
    call_command("setalertrule", "source-down", "--for", "0")
    feed = Feed()
    feed.snaps = [source_snapshot("box-9", "unreachable")]
    running_evaluator(feed)
    wait_until(lambda: smtp.messages, 10, "the firing email")
    feed.snaps = [source_snapshot("box-9", "online", seq=2)]
    wait_until(lambda: len(smtp.messages) >= 2, 10, "the resolution email")
    sender, rcpts, content = smtp.messages[0]
    assert sender == "alerts@panel.example" and sorted(rcpts) == ["oncall@example.com", "ops@example.com"]
    message = email.message_from_bytes(content)
    assert message["Subject"] == "vastmanager alerts: 1 firing (source-down)"
    text = message.get_payload(decode=True).decode()
    assert "[FIRING] source-down on box-9" in text and "refused" in text
    resolved = email.message_from_bytes(smtp.messages[1][2])
    assert "[RESOLVED] source-down on box-9" in resolved.get_payload(decode=True).decode()
    # The receiver has the message before the sender records its answer: wait for the record.
    wait_until(lambda: set(Delivery.objects.values_list("state", flat=True)) == {"sent"}, 10,
               "both deliveries recorded as sent")


def test_testnotifier_sends_one_email_now(smtp, capsys) -> None:
    call_command("addnotifier", "ops", "--kind", "email", "--to", "ops@example.com")
    call_command("testnotifier", "ops")
    assert "delivered" in capsys.readouterr().out
    assert len(smtp.messages) == 1 and b"a test notification from notifier ops" in smtp.messages[0][2]
