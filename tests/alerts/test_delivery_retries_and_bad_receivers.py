"""Receivers that misbehave: one failing twice then accepting (every attempt recorded), one that
hangs (evaluation goes on, another notifier is served), one sending 100 MB back (read capped),
one that does not exist (a failed attempt recorded, never a stalled evaluator)."""
from __future__ import annotations

import socket
import time

import pytest
from django.core.management import call_command

from statuspanel.alerts.models import Delivery, DeliveryAttempt
from tests.alerts.conftest import Feed, source_snapshot
from tests.alerts.receivers import WebhookReceiver
from tests.fleet.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def _down_feed() -> Feed:
    call_command("setalertrule", "source-down", "--for", "0")
    feed = Feed()
    feed.snaps = [source_snapshot("box-3", "unreachable")]
    return feed


def test_a_receiver_failing_twice_gets_the_message_on_the_third_attempt(running_evaluator) -> None:
    with WebhookReceiver("fail-then-ok", failures=2) as flaky:
        call_command("addnotifier", "flaky", "--kind", "webhook", "--url", flaky.url)
        running_evaluator(_down_feed())
        wait_until(lambda: Delivery.objects.filter(state="sent").exists(), 15, "the delivery accepted")
    attempts = list(DeliveryAttempt.objects.order_by("number").values_list("number", "ok", "status", "error"))
    assert attempts == [(1, False, 500, "HTTP 500"), (2, False, 500, "HTTP 500"), (3, True, 200, "")]
    assert flaky.attempts == 3 and len(flaky.posts) == 1


def test_a_hanging_receiver_holds_neither_evaluation_nor_other_notifiers(running_evaluator, settings) -> None:
    settings.ALERTS_DELIVERY_TIMEOUT_SECS = 30.0  # longer than the test: only its own thread waits
    with WebhookReceiver("hang") as stuck, WebhookReceiver("ok") as good:
        call_command("addnotifier", "stuck", "--kind", "webhook", "--url", stuck.url)
        call_command("addnotifier", "good", "--kind", "webhook", "--url", good.url)
        feed = _down_feed()
        evaluator = running_evaluator(feed)
        wait_until(lambda: good.posts and stuck.attempts, 10, "both receivers reached")
        before = evaluator.evaluations
        feed.snaps = [source_snapshot("box-3", "online", seq=2)]
        wait_until(lambda: len(good.posts) >= 2, 10, "the resolution at the good receiver")
        assert evaluator.evaluations >= before + 2
        assert Delivery.objects.filter(notifier_name="stuck", state="sending").count() == 1


def test_a_receiver_flooding_its_answer_is_read_no_further_than_the_cap(running_evaluator) -> None:
    with WebhookReceiver("flood") as flood:
        call_command("addnotifier", "flood", "--kind", "webhook", "--url", flood.url)
        running_evaluator(_down_feed())
        wait_until(lambda: Delivery.objects.filter(state="sent").exists(), 15, "the delivery accepted")
    (attempt,) = DeliveryAttempt.objects.all()
    assert attempt.ok and attempt.status == 200 and attempt.duration_ms < 5000


def test_an_unreachable_receiver_is_a_recorded_failure(running_evaluator, settings) -> None:
    settings.ALERTS_DELIVERY_ATTEMPTS = 2
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    call_command("addnotifier", "nowhere", "--kind", "webhook", "--url", f"http://127.0.0.1:{port}/hook")
    evaluator = running_evaluator(_down_feed())
    wait_until(lambda: Delivery.objects.filter(state="failed").exists(), 15, "the delivery given up")
    errors = list(DeliveryAttempt.objects.order_by("number").values_list("ok", "error"))
    assert len(errors) == 2 and all(not ok and "cannot connect" in e for ok, e in errors)
    before = evaluator.evaluations
    time.sleep(1.0)
    assert evaluator.evaluations > before
