"""The evaluator lease on the database row: one holder; an expired one is taken over; a holder that
lost it has its writes rolled back (fenced); a clean stop hands it over at once."""
from __future__ import annotations

import time

import pytest

from statuspanel.alerts.lease import Lease, LeaseLost
from statuspanel.alerts.models import Alert, EvaluatorLease

pytestmark = pytest.mark.django_db


def test_one_holder_at_a_time_and_an_expired_lease_is_taken_over() -> None:
    a, b = Lease(ttl=0.5, holder="a"), Lease(ttl=0.5, holder="b")
    assert a.acquire_or_renew() and not b.acquire_or_renew()
    assert a.acquire_or_renew() and a.current_holder() == "a"
    time.sleep(0.6)
    assert b.acquire_or_renew() and not a.acquire_or_renew()
    assert EvaluatorLease.objects.get().holder == "b"


def test_a_holder_that_lost_the_lease_writes_nothing() -> None:
    a, b = Lease(ttl=0.3, holder="a"), Lease(ttl=5, holder="b")
    assert a.acquire_or_renew()
    time.sleep(0.4)
    assert b.acquire_or_renew()
    with pytest.raises(LeaseLost):
        with a.fenced():
            Alert.objects.create(rule="source-down", engine="x", subject="x", severity="critical", state="firing",
                                 message="m", started_at="2026-01-01T00:00:00Z", last_seen_at="2026-01-01T00:00:00Z")
    assert not Alert.objects.exists()


def test_releasing_hands_the_lease_over_at_once() -> None:
    a, b = Lease(ttl=60, holder="a"), Lease(ttl=60, holder="b")
    assert a.acquire_or_renew() and not b.acquire_or_renew()
    a.release()
    assert b.acquire_or_renew()
