"""The server side the panel calls: the firing alerts, acknowledge and silence (who and when kept,
bad input answered), a silenced alert notifying nobody, and `vastmanager_alerts_firing` on /metrics."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from statuspanel.alerts.evaluator import Evaluator
from statuspanel.alerts.models import Alert, Notice
from statuspanel.alerts.panel import firing_alerts
from tests.alerts.conftest import Feed, source_snapshot

pytestmark = pytest.mark.django_db


def _fire(feed: Feed, *names: str) -> Evaluator:
    call_command("setalertrule", "source-down", "--for", "0")
    feed.snaps = [source_snapshot(n, "unreachable") for n in names]
    evaluator = Evaluator(snapshots=feed)
    assert evaluator.lease.acquire_or_renew()
    evaluator.evaluate_once()
    return evaluator


@pytest.fixture
def operator_client() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_user("alice", password="x" * 20))
    return client


def test_acknowledge_and_silence_are_recorded_with_who_and_when(operator_client) -> None:
    _fire(Feed(), "box-1", "box-2")
    listed = operator_client.get("/api/alerts").json()["alerts"]
    assert [(a["engine"], a["state"]) for a in listed] == [("box-2", "firing"), ("box-1", "firing")]  # newest first
    alert_id = listed[0]["id"]
    answer = operator_client.post(f"/api/alerts/{alert_id}/acknowledge")
    assert answer.status_code == 200 and answer.json()["alert"]["acknowledged_by"] == "alice"
    answer = operator_client.post(f"/api/alerts/{alert_id}/silence", '{"minutes": 30}', content_type="application/json")
    assert answer.status_code == 200
    row = Alert.objects.get(id=alert_id)
    assert row.silenced_by == "alice" and row.acknowledged_at is not None
    assert timedelta(minutes=29) < row.silenced_until - timezone.now() <= timedelta(minutes=30)
    assert firing_alerts(engine=row.engine)[0]["silenced_until"] is not None


@pytest.mark.parametrize("body, status, message", [
    ('{"minutes": 0}', 400, "from 1 to 10080"),
    ('{"minutes": "soon"}', 400, "whole number"),
    ('{"minutes": true}', 400, "whole number"),
    ('{"minutes": 99999}', 400, "from 1 to 10080"),
    ("not json", 400, "body must be JSON"),
    ("[1]", 400, "body must be JSON"),
])
def test_bad_silences_are_answered_and_change_nothing(operator_client, body, status, message) -> None:
    _fire(Feed(), "box-1")
    alert_id = Alert.objects.get().id
    answer = operator_client.post(f"/api/alerts/{alert_id}/silence", body, content_type="application/json")
    assert answer.status_code == status and message in answer.json()["error"]
    assert Alert.objects.get().silenced_until is None


def test_acting_needs_an_operator_and_an_open_alert(operator_client) -> None:
    _fire(Feed(), "box-1")
    alert_id = Alert.objects.get().id
    assert Client().post(f"/api/alerts/{alert_id}/acknowledge").status_code == 401
    assert operator_client.get(f"/api/alerts/{alert_id}/acknowledge").status_code == 405
    assert operator_client.post("/api/alerts/999999/acknowledge").status_code == 404
    Alert.objects.update(state="resolved", resolved_at=timezone.now())
    assert operator_client.post(f"/api/alerts/{alert_id}/acknowledge").status_code == 409


def test_a_silenced_alert_notifies_nobody_and_its_end_follows_what_was_told() -> None:
    from statuspanel.alerts.panel import silence

    call_command("addnotifier", "hook", "--kind", "webhook", "--url", "http://127.0.0.1:9/hook")
    feed = Feed()
    evaluator = _fire(feed, "box-1")
    assert list(Notice.objects.values_list("event", flat=True)) == ["firing"]
    silence(Alert.objects.get().id, 5, "alice")
    feed.snaps = []
    evaluator.evaluate_once()
    assert Notice.objects.filter(event="resolved").count() == 1  # told of the firing: told of the end too

    Notice.objects.all().delete()
    call_command("setalertrule", "source-down", "--for", "600")
    feed.snaps = [source_snapshot("box-2", "unreachable")]
    evaluator.evaluate_once()
    silence(Alert.objects.get(state="pending").id, 10, "alice")  # silenced while pending
    call_command("setalertrule", "source-down", "--for", "0")
    evaluator.evaluate_once()
    assert Alert.objects.get(engine="box-2").state == "firing"
    feed.snaps = []
    evaluator.evaluate_once()
    assert Alert.objects.get(engine="box-2").state == "resolved"
    assert not Notice.objects.exists()


def test_metrics_show_the_firing_alerts(operator_client) -> None:
    _fire(Feed(), "box-1", "box-2")
    text = operator_client.get("/metrics").content.decode()
    assert 'vastmanager_alerts_firing{engine="box-1",rule="source-down",severity="critical"} 1.0' in text
    assert 'vastmanager_alerts_firing{engine="box-2",rule="source-down",severity="critical"} 1.0' in text
