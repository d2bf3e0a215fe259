"""50 sources going dark together (one dead switch) are one message per notifier, not 50; what
fires within the group interval after it is folded into one follow-up."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from statuspanel.alerts.models import Alert, Delivery
from tests.alerts.conftest import Feed, source_snapshot
from tests.alerts.receivers import WebhookReceiver
from tests.fleet.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_fifty_sources_down_at_once_are_one_message_per_notifier(running_evaluator, settings) -> None:
    settings.ALERTS_GROUP_INTERVAL_SECS = 3.0
    call_command("setalertrule", "source-down", "--for", "0")
    feed = Feed()
    feed.snaps = [source_snapshot(f"box-{i:02d}") for i in range(50)]
    with WebhookReceiver() as first, WebhookReceiver() as second:
        call_command("addnotifier", "first", "--kind", "webhook", "--url", first.url)
        call_command("addnotifier", "second", "--kind", "slack", "--url", second.url)
        running_evaluator(feed)
        feed.snaps = [source_snapshot(f"box-{i:02d}", "unreachable", seq=2) for i in range(50)]
        wait_until(lambda: first.posts and second.posts, 10, "the grouped messages")
        wait_until(lambda: Alert.objects.filter(state="firing").count() == 50, 5, "50 alerts firing")

        feed.snaps[0] = source_snapshot("box-00", "online", seq=3)   # one recovers, two more go down
        feed.snaps.append(source_snapshot("box-50", "malformed"))
        feed.snaps.append(source_snapshot("box-51", "malformed"))
        wait_until(lambda: len(first.posts) >= 2 and len(second.posts) >= 2, 10, "the follow-ups")

        body = first.bodies()[0]
        assert len(first.posts) == 2 and body["firing"] == 50 and len(body["alerts"]) == 50
        assert sorted(a["engine"] for a in body["alerts"]) == [f"box-{i:02d}" for i in range(50)]
        follow = first.bodies()[1]["alerts"]
        assert sorted((a["engine"], a["state"]) for a in follow) == [
            ("box-00", "resolved"), ("box-50", "firing"), ("box-51", "firing")]
        slack = second.bodies()[0]
        assert slack["text"].startswith("vastmanager alerts: 50 firing (source-down)")
        assert len(slack["blocks"]) <= 40 and "more" in slack["blocks"][-1]["elements"][0]["text"]
        gap = first.posts[1][2] - first.posts[0][2]
        assert gap >= 2.9, f"the follow-up waited the group interval (came after {gap:.1f} s)"
    assert Delivery.objects.count() == 4
