"""Delivery: the outbox folded into one message per notifier, sent in threads of its own, retried.

Grouping (per notifier): a notice waits `ALERTS_GROUP_WAIT_SECS` (2 s) so what fires together
travels together; after a message, whatever comes within `ALERTS_GROUP_INTERVAL_SECS` (30 s) is
folded into one follow-up sent when the interval is over. 50 sources behind one dead switch are one
message, not 50. A message is a `Delivery` row that takes its notices in a fenced transaction (only
the lease holder hands notices out; a notice is taken once). Its sender tries up to
`ALERTS_DELIVERY_ATTEMPTS` times with exponential backoff from `ALERTS_RETRY_BASE_SECS`, recording
every attempt; one message per notifier is in flight at a time, others never wait on it.
A successor that takes the lease resumes messages left `sending` by its predecessor.
"""
from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable

from django.conf import settings
from django.db import close_old_connections, connection
from django.db.models import Max, Min

from statuspanel.alerts import notifiers
from statuspanel.alerts.lease import Lease, LeaseLost
from statuspanel.alerts.models import Delivery, DeliveryAttempt, Notice, Notifier

log = logging.getLogger(__name__)

TICK_SECS = 0.2
MAX_BACKOFF_SECS = 300.0


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


def _now() -> datetime:
    return datetime.now(timezone.utc)


class Dispatcher:
    def __init__(self, *, threads: int = 4) -> None:
        self.group_wait = _setting("ALERTS_GROUP_WAIT_SECS", 2.0)
        self.group_interval = _setting("ALERTS_GROUP_INTERVAL_SECS", 30.0)
        self.attempts = int(_setting("ALERTS_DELIVERY_ATTEMPTS", 5))
        self.retry_base = _setting("ALERTS_RETRY_BASE_SECS", 2.0)
        self._pool = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="alerts-send")
        # keyed by notifier_id (nullable: a notifier removed meanwhile leaves its deliveries)
        self._inflight: dict[int | None, concurrent.futures.Future[None]] = {}
        self._last_sent: dict[int, float] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._is_holder: Callable[[], bool] = lambda: False
        self._lease: Lease | None = None
        self._resume = False
        self.sent = 0

    def start(self, *, is_holder: Callable[[], bool], lease: Lease) -> None:
        self._is_holder, self._lease = is_holder, lease
        self._thread = threading.Thread(target=self._main, name="alerts-dispatch", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
        # A send in progress ends its attempt (bounded by the delivery timeout) and is not retried now;
        # waiting a little lets it record that attempt. One still unfinished is resumed by a successor.
        concurrent.futures.wait(list(self._inflight.values()), timeout=min(timeout, 3.0))
        self._pool.shutdown(wait=False, cancel_futures=True)

    def wake(self) -> None:
        self._wake.set()

    def took_over(self) -> None:
        """This process just took the lease: learn when each notifier was last sent to, resume the rest."""
        self._resume = True
        self.wake()

    def _main(self) -> None:
        try:
            while not self._stop.is_set():
                self._wake.wait(TICK_SECS)
                self._wake.clear()
                if self._stop.is_set() or not self._is_holder():
                    continue
                try:
                    close_old_connections()
                    if self._resume:
                        self._resume = False
                        self._take_over()
                    self.dispatch()
                except LeaseLost:
                    pass
                except Exception:  # the database away for a moment: the notices wait in the outbox
                    log.exception("alerts: dispatching notifications failed")
                    connection.close()
        finally:
            connection.close()

    def _take_over(self) -> None:
        for notifier_id, last in Delivery.objects.values("notifier_id").annotate(last=Max("created_at")).values_list(
                "notifier_id", "last"):
            if notifier_id is not None:
                self._last_sent[notifier_id] = max(self._last_sent.get(notifier_id, 0.0), last.timestamp())
        for delivery in Delivery.objects.filter(state=Delivery.SENDING).select_related("notifier"):
            if delivery.notifier is not None and delivery.notifier_id not in self._inflight:
                self._submit(delivery)

    def dispatch(self, now: float | None = None) -> int:
        """Hand every notifier whose group is due one message; how many messages were started."""
        now = now if now is not None else time.time()
        started = 0
        due = (Notice.objects.filter(delivery__isnull=True).values("notifier_id")
               .annotate(first=Min("created_at")).values_list("notifier_id", "first"))
        for notifier_id, first in list(due):
            inflight = self._inflight.get(notifier_id)
            if inflight is not None and not inflight.done():
                continue
            if now - first.timestamp() < self.group_wait:
                continue
            if now - self._last_sent.get(notifier_id, 0.0) < self.group_interval:
                continue
            delivery = self._claim(notifier_id, now)
            if delivery is not None:
                self._last_sent[notifier_id] = now
                self._submit(delivery)
                started += 1
        return started

    def _claim(self, notifier_id: int, now: float) -> Delivery | None:
        assert self._lease is not None
        with self._lease.fenced():
            notifier = Notifier.objects.filter(id=notifier_id).first()
            pending = list(Notice.objects.filter(notifier_id=notifier_id, delivery__isnull=True)
                           .select_related("alert").order_by("created_at", "id"))
            if notifier is None or not pending:
                return None
            alerts = [_alert_event(n) for n in pending]
            delivery = Delivery.objects.create(
                notifier=notifier, notifier_name=notifier.name, created_at=datetime.fromtimestamp(now, timezone.utc),
                alerts=len(alerts), summary=notifiers.summary(alerts)[:500],
                body={"alerts": alerts})
            Notice.objects.filter(id__in=[n.id for n in pending]).update(delivery=delivery)
        delivery.notifier = notifier
        return delivery

    def _submit(self, delivery: Delivery) -> None:
        try:
            self._inflight[delivery.notifier_id] = self._pool.submit(self._send_safely, delivery.id)
        except RuntimeError:  # the pool is shut down: the process is stopping; a successor resumes it
            pass

    def _send_safely(self, delivery_id: int) -> None:
        try:
            self.send(delivery_id)
        except Exception:
            log.exception("alerts: delivery %s failed unexpectedly", delivery_id)
        finally:
            connection.close()

    def send(self, delivery_id: int) -> bool:
        """Try a delivery until it is accepted or its attempts are spent; every attempt recorded."""
        delivery = Delivery.objects.select_related("notifier").get(id=delivery_id)
        notifier = delivery.notifier
        if notifier is None:
            Delivery.objects.filter(id=delivery_id).update(state=Delivery.FAILED, finished_at=_now())
            return False
        alerts = list(delivery.body.get("alerts") or [])
        number = delivery.attempts.count()
        while number < self.attempts and not self._stop.is_set():
            number += 1
            outcome = notifiers.send(notifier.kind, notifier.url, notifier.secret, notifier.recipients or [],
                                     notifier.name, alerts)
            DeliveryAttempt.objects.create(delivery=delivery, number=number, at=_now(), ok=outcome.ok,
                                           status=outcome.status, error=outcome.error[:500],
                                           duration_ms=outcome.duration_ms)
            if outcome.ok:
                Delivery.objects.filter(id=delivery_id).update(state=Delivery.SENT, finished_at=_now())
                self.sent += 1
                return True
            log.warning("alerts: notifier %s attempt %d failed: %s", notifier.name, number, outcome.error)
            if number < self.attempts:
                self._stop.wait(min(MAX_BACKOFF_SECS, self.retry_base * 2 ** (number - 1)))
        if number >= self.attempts:
            Delivery.objects.filter(id=delivery_id).update(state=Delivery.FAILED, finished_at=_now())
        return False


def _alert_event(notice: Notice) -> dict[str, Any]:
    """One entry of a message's `alerts` list: the alert as it was when the notice was written."""
    a = notice.alert
    data = a.to_dict()
    data["state"] = notice.event
    if notice.event == "firing":
        data["resolved_at"] = None
    return {k: data[k] for k in ("id", "rule", "state", "engine", "subject", "severity", "message", "value",
                                 "started_at", "fired_at", "resolved_at")}


def send_test(notifier: Notifier) -> notifiers.Outcome:
    """`testnotifier`: one made-up firing alert sent now, synchronously, through the real sender."""
    now = _now().isoformat()
    alert = {"id": 0, "rule": "test", "state": "firing", "engine": "vastmanager", "subject": "testnotifier",
             "severity": "warning", "message": f"a test notification from notifier {notifier.name}",
             "value": None, "started_at": now, "fired_at": now, "resolved_at": None}
    return notifiers.send(notifier.kind, notifier.url, notifier.secret, notifier.recipients or [], notifier.name,
                          [alert])
