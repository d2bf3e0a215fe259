"""The alert tests: fast timings, receivers on loopback, and evaluators over snapshots a test sets."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.alerts.receivers import WebhookReceiver
from tests.fleet.conftest import collect  # noqa: F401 - the fleet collector fixture, for the end-to-end tests

SECRET = "a-webhook-secret-of-some-length"


@pytest.fixture
def fast_alerts(settings) -> None:
    """Grouping, retries and the lease at test speed (the same code paths as the defaults)."""
    settings.ALERTS_GROUP_WAIT_SECS = 0.3
    settings.ALERTS_GROUP_INTERVAL_SECS = 1.0
    settings.ALERTS_RETRY_BASE_SECS = 0.1
    settings.ALERTS_DELIVERY_ATTEMPTS = 4
    settings.ALERTS_DELIVERY_TIMEOUT_SECS = 2.0
    settings.ALERTS_EVAL_SECS = 0.2
    settings.ALERTS_LEASE_SECS = 2.0


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver("ok") as r:
        yield r


class Feed:
    """The snapshots an evaluator sees, set by the test."""

    def __init__(self) -> None:
        self.snaps: list[dict[str, Any]] = []

    def __call__(self) -> list[dict[str, Any]]:
        return [dict(s) for s in self.snaps]


@pytest.fixture
def running_evaluator(fast_alerts):
    """`running_evaluator(feed=None)` starts an Evaluator with a Dispatcher (threads), stopped after."""
    from statuspanel.alerts.delivery import Dispatcher
    from statuspanel.alerts.evaluator import Evaluator, default_snapshots

    started = []

    def start(feed=None, **kwargs):
        evaluator = Evaluator(snapshots=feed or default_snapshots, dispatcher=Dispatcher(), **kwargs).start()
        started.append(evaluator)
        return evaluator

    yield start
    for evaluator in started:
        evaluator.stop()


def source_snapshot(name: str, state: str = "online", seq: int = 1, **extra: Any) -> dict[str, Any]:
    """A fleet source's snapshot as the collector publishes it (docs/FLEET.md), in `state`."""
    snap = {"engine_id": name, "seq": seq, "pipelines": [], "gpu_workers": [], "counters": {"queue_depth": 0},
            "memory": {"total_bytes": 100, "used_bytes": 10, "available_bytes": 90},
            "source": {"kind": "cuzk", "transport": "http", "state": state,
                       "error": None if state == "online" else "refused: connection refused",
                       "reason": None if state == "online" else "refused"}}
    snap.update(extra)
    return snap
