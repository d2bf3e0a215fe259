"""A source that goes down fires `source-down` after its `for`, and one signed webhook post arrives
with the documented body; when it recovers, a resolution arrives. Real loopback receiver, real
evaluator and dispatcher threads, SQLite."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from statuspanel.alerts.models import Alert, Delivery
from tests.alerts.conftest import SECRET, Feed, source_snapshot
from tests.alerts.receivers import valid_signature
from tests.fleet.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_down_source_fires_once_signed_then_resolves(running_evaluator, receiver) -> None:
    call_command("addnotifier", "hook", "--kind", "webhook", "--url", receiver.url, "--secret", SECRET)
    call_command("setalertrule", "source-down", "--for", "0.5")
    feed = Feed()
    feed.snaps = [source_snapshot("box-7", "unreachable")]
    evaluator = running_evaluator(feed)

    wait_until(lambda: receiver.posts, 10, "the firing notification")
    headers, raw, _ = receiver.posts[0]
    assert valid_signature(SECRET, headers, raw)
    body = receiver.bodies()[0]
    assert body["version"] == 1 and body["firing"] == 1
    (alert,) = body["alerts"]
    assert {k: alert[k] for k in ("rule", "state", "engine", "subject")} == {
        "rule": "source-down", "state": "firing", "engine": "box-7", "subject": "box-7"}
    assert "box-7 unreachable" in alert["message"] and "refused" in alert["message"]
    assert alert["started_at"] and alert["resolved_at"] is None
    row = Alert.objects.get()
    assert row.state == "firing" and (row.fired_at - row.started_at).total_seconds() >= 0.5

    feed.snaps = [source_snapshot("box-7", "online", seq=2)]
    wait_until(lambda: len(receiver.posts) >= 2, 10, "the resolution")
    resolved = receiver.bodies()[1]["alerts"]
    assert [(a["rule"], a["state"], a["engine"]) for a in resolved] == [("source-down", "resolved", "box-7")]
    assert resolved[0]["resolved_at"]
    assert valid_signature(SECRET, receiver.posts[1][0], receiver.posts[1][1])
    assert Alert.objects.get().state == "resolved"

    evaluations = evaluator.evaluations
    wait_until(lambda: evaluator.evaluations > evaluations + 3, 10, "more evaluations")
    assert len(receiver.posts) == 2, "no repeats while nothing changes"
    assert list(Delivery.objects.values_list("state", flat=True)) == ["sent", "sent"]


def test_a_condition_that_clears_before_its_for_never_notifies(running_evaluator, receiver) -> None:
    call_command("addnotifier", "hook", "--kind", "webhook", "--url", receiver.url)
    call_command("setalertrule", "source-down", "--for", "30")
    feed = Feed()
    feed.snaps = [source_snapshot("box-1", "malformed")]
    evaluator = running_evaluator(feed)
    wait_until(lambda: Alert.objects.filter(state="pending").exists(), 10, "a pending alert")
    feed.snaps = [source_snapshot("box-1", "online", seq=2)]
    wait_until(lambda: not Alert.objects.exists(), 10, "the pending alert dropped")
    evaluations = evaluator.evaluations
    wait_until(lambda: evaluator.evaluations > evaluations + 3, 10, "more evaluations")
    assert receiver.posts == [] and not Delivery.objects.exists()
