"""Resolved alerts and finished deliveries older than ALERTS_RETENTION_DAYS are pruned; open alerts,
recent history and a delivery still sending are kept."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from statuspanel.alerts.evaluator import prune
from statuspanel.alerts.models import Alert, Delivery

pytestmark = pytest.mark.django_db


def _alert(state: str, age_days: float, subject: str) -> Alert:
    when = timezone.now() - timedelta(days=age_days)
    return Alert.objects.create(rule="source-down", engine="box", subject=subject, severity="critical", state=state,
                                message="m", started_at=when, last_seen_at=when,
                                resolved_at=when if state == "resolved" else None)


def test_old_history_is_pruned_and_the_rest_kept() -> None:
    _alert("resolved", 31, "old")
    _alert("resolved", 29, "recent")
    _alert("firing", 40, "still-open")
    old = timezone.now() - timedelta(days=31)
    Delivery.objects.create(notifier_name="n", created_at=old, state="sent")
    Delivery.objects.create(notifier_name="n", created_at=old, state="sending")
    assert prune(30) == 1
    assert sorted(Alert.objects.values_list("subject", flat=True)) == ["recent", "still-open"]
    assert list(Delivery.objects.values_list("state", flat=True)) == ["sending"]
    assert prune(0) == 0 and Alert.objects.count() == 2
