"""What the panel reads and what an operator does: the open alerts, acknowledge, silence.

`firing_alerts()` is the list the panel shows (firing, newest first); `acknowledge` and `silence`
record who and when. A silenced alert stays listed (marked) but sends no notification until the
silence ends; an acknowledged one is marked as seen.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from django.db import transaction

from statuspanel.alerts import specs
from statuspanel.alerts.models import Alert

MAX_SILENCE_MINUTES = 7 * 24 * 60


class AlertActionError(ValueError):
    """An action that cannot be done, with the reason (answered as a 4xx)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def firing_alerts(engine: str | None = None, *, include_pending: bool = False) -> list[dict[str, Any]]:
    """Firing alerts (and pending ones on request), newest first, as the panel and API send them."""
    states = specs.OPEN_STATES if include_pending else (specs.FIRING,)
    rows = Alert.objects.filter(state__in=states)
    if engine is not None:
        rows = rows.filter(engine=engine)
    return [a.to_dict() for a in rows.order_by("-fired_at", "-started_at", "-id")[:500]]


def _open_alert(alert_id: int) -> Alert:
    alert = Alert.objects.select_for_update().filter(id=alert_id).first()
    if alert is None:
        raise AlertActionError(f"no alert with id {alert_id}", 404)
    if alert.state == specs.RESOLVED:
        raise AlertActionError(f"alert {alert_id} is already resolved", 409)
    return alert


def acknowledge(alert_id: int, who: str) -> Alert:
    with transaction.atomic():
        alert = _open_alert(alert_id)
        alert.acknowledged_by, alert.acknowledged_at = who[:150], datetime.now(timezone.utc)
        alert.save(update_fields=["acknowledged_by", "acknowledged_at"])
    return alert


def parse_minutes(value: object) -> int:
    """The one check of a silence's length, however it arrives."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise AlertActionError(f"minutes must be a whole number from 1 to {MAX_SILENCE_MINUTES}")
    try:
        minutes = int(value)
    except ValueError:
        raise AlertActionError(f"minutes must be a whole number from 1 to {MAX_SILENCE_MINUTES}") from None
    if not 1 <= minutes <= MAX_SILENCE_MINUTES:
        raise AlertActionError(f"minutes must be from 1 to {MAX_SILENCE_MINUTES}, got {minutes}")
    return minutes


def silence(alert_id: int, minutes: object, who: str) -> Alert:
    minutes = parse_minutes(minutes)
    with transaction.atomic():
        alert = _open_alert(alert_id)
        now = datetime.now(timezone.utc)
        alert.silenced_until, alert.silenced_by, alert.silenced_at = now + timedelta(minutes=minutes), who[:150], now
        alert.save(update_fields=["silenced_until", "silenced_by", "silenced_at"])
    return alert
