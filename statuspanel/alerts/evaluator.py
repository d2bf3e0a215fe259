"""The evaluator: every few seconds, the rules over the latest snapshots and facts, and the lifecycle.

Per (rule, engine, subject) at most one open alert: `pending` when its condition is first seen
(`started_at`), `firing` once it has held for the rule's `for` (at once when `for` is 0), `resolved`
when the condition is gone (a pending one that never fired is deleted: nothing happened). Firing and
resolving write the outbox (Notice rows, one per enabled notifier; none while silenced) in the same
fenced transaction as the transition, so a hand-over neither loses nor repeats a notification.

`Evaluator` runs in a thread of the serving process and evaluates only while it holds the lease;
delivery runs in the Dispatcher's own threads, so a hanging receiver never holds evaluation.
"""
from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Callable, Sequence

from django.conf import settings
from django.db import close_old_connections, connection

from gpu_engine.schema import SnapshotDocument
from statuspanel.alerts import facts as db_facts
from statuspanel.alerts import specs
from statuspanel.alerts.lease import Lease, LeaseLost
from statuspanel.alerts.models import Alert, DeliveryAttempt, Notice, Notifier, RuleOverride, RuleSetting
from statuspanel.alerts.observations import Observations
from statuspanel.alerts.rules import RULE_FUNCTIONS, Condition, Facts, fmt_secs

if TYPE_CHECKING:
    from statuspanel.alerts.delivery import Dispatcher

log = logging.getLogger(__name__)

PRUNE_EVERY_SECS = 3600.0
TOUCH_EVERY_SECS = 30.0  # an open alert's message and value are rewritten at most this often


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


def load_settings() -> Callable[[str, str], specs.Effective]:
    """The effective setting of a rule for an engine: defaults < the rule's row < the engine's override."""
    rows = {r.rule: r for r in RuleSetting.objects.all()}
    overrides = {(o.rule, o.engine): o for o in RuleOverride.objects.all()}
    cache: dict[tuple[str, str], specs.Effective] = {}

    def effective(rule: str, engine: str) -> specs.Effective:
        key = (rule, engine)
        if key not in cache:
            spec, row, over = specs.RULES[rule], rows.get(rule), overrides.get(key)
            enabled, threshold, for_secs = True, spec.threshold, spec.for_secs
            for layer in (row, over):
                if layer is None:
                    continue
                enabled = layer.enabled if layer.enabled is not None else enabled
                threshold = layer.threshold if layer.threshold is not None else threshold
                for_secs = layer.for_secs if layer.for_secs is not None else for_secs
            cache[key] = specs.Effective(enabled, threshold, for_secs)
        return cache[key]

    return effective


def default_snapshots() -> Sequence[SnapshotDocument]:
    from statuspanel.live import current_snapshots

    return current_snapshots()[0]


class Evaluator:
    """Evaluates while holding the lease; `start()` runs it in a thread, `stop()` ends it cleanly."""

    def __init__(self, *, interval: float | None = None, lease: Lease | None = None,
                 snapshots: Callable[[], Sequence[SnapshotDocument]] = default_snapshots,
                 dispatcher: Dispatcher | None = None, clock: Callable[[], float] = time.time) -> None:
        self.interval = interval if interval is not None else _setting("ALERTS_EVAL_SECS", 1.0)
        self.lease = lease or Lease(ttl=_setting("ALERTS_LEASE_SECS", 5.0))
        self.snapshots = snapshots
        self.clock = clock
        self.dispatcher = dispatcher
        self.observations = Observations()
        self.holding = False
        self.evaluations = 0
        self.errors = 0
        self._p95: dict[tuple[str, str], float] = {}
        self._p95_at = 0.0
        self._next_prune = 0.0
        self.next_due: float | None = None  # wall time a pending alert reaches its `for`: evaluated then
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- thread -------------------------------------------------------------------------------
    def start(self) -> Evaluator:
        self._thread = threading.Thread(target=self._main, name="alerts-evaluator", daemon=True)
        self._thread.start()
        if self.dispatcher is not None:
            self.dispatcher.start(is_holder=lambda: self.holding, lease=self.lease)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
        if self.dispatcher is not None:
            self.dispatcher.stop(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _main(self) -> None:
        renew_every = min(self.interval, self.lease.ttl / 3.0)
        next_eval = 0.0
        try:
            while not self._stop.is_set():
                try:
                    if self._tick(next_eval):
                        next_eval = time.monotonic() + self.interval
                        if self.next_due is not None:  # a pending alert fires on time, not an interval late
                            next_eval = min(next_eval, time.monotonic() + max(0.05, self.next_due - self.clock()))
                except Exception:  # the database away for a moment: try again next tick
                    self.errors += 1
                    self.holding = False
                    log.exception("alerts: evaluation failed")
                    connection.close()
                self._stop.wait(min(renew_every, max(0.05, next_eval - time.monotonic())))
        finally:
            if self.holding:
                try:
                    self.lease.release()
                except Exception:  # noqa: BLE001 - whatever failed, the successor waits for the expiry instead
                    log.warning("alerts: releasing the evaluator lease failed")
            self.holding = False
            connection.close()

    def _tick(self, next_eval: float) -> bool:
        close_old_connections()
        held = self.lease.acquire_or_renew()
        if held and not self.holding:
            log.info("alerts: this process evaluates now (%s)", self.lease.holder)
            self.observations = Observations()  # what a previous turn saw may be stale
            if self.dispatcher is not None:
                self.dispatcher.took_over()
        self.holding = held
        if held and time.monotonic() >= next_eval:
            self.evaluate_once()
            return True
        return False

    # -- one evaluation -----------------------------------------------------------------------
    def evaluate_once(self) -> list[Condition]:
        now = self.clock()
        window = _setting("ALERTS_FAILURE_WINDOW_SECS", 600.0)
        snaps = self.snapshots()
        self.observations.observe(snaps, now, window)
        effective = load_settings()
        facts = self.facts(now, snaps, window, effective)
        conditions: list[Condition] = []
        for rule, fn in RULE_FUNCTIONS.items():
            if not effective(rule, specs.QUEUE_ENGINE).enabled and not specs.RULES[rule].per_engine:
                continue
            conditions.extend(c for c in fn(snaps, facts, effective) if effective(c.rule, c.engine).enabled)
        try:
            with self.lease.fenced():
                self.apply(conditions, now, effective)
        except LeaseLost:
            self.holding = False
            log.warning("alerts: the evaluator lease passed to another process; this evaluation was dropped")
            return conditions
        self.evaluations += 1
        if self.dispatcher is not None:
            self.dispatcher.wake()
        if time.monotonic() >= self._next_prune:
            self._next_prune = time.monotonic() + PRUNE_EVERY_SECS
            prune(_setting("ALERTS_RETENTION_DAYS", 30.0))
        return conditions

    def facts(self, now: float, snaps: Sequence[SnapshotDocument], window: float,
              effective: Callable[[str, str], specs.Effective]) -> Facts:
        when = datetime.fromtimestamp(now, timezone.utc)
        if now - self._p95_at >= db_facts.P95_REFRESH_SECS:
            self._p95, self._p95_at = db_facts.phase_p95(when), now
        queued, oldest = db_facts.queue(when)
        failures = db_facts.failures(when, window)
        for snap in snaps:
            if isinstance(snap.get("source"), dict):
                engine = str(snap.get("engine_id"))
                found = self.observations.fleet_failures(engine)
                if found:
                    failures[engine] = found
        p95 = dict(self.observations.observed_p95())
        p95.update(self._p95)
        ages = db_facts.heartbeat_ages(when)
        return Facts(
            now=now, queued_by_kind=queued, oldest_queued=oldest, failures=failures,
            requeues=db_facts.requeues(int(effective("requeue-loop", specs.QUEUE_ENGINE).threshold)),
            heartbeat_ages=ages, p95_secs=p95, consistency_streaks=dict(self.observations.streaks),
            stuck_floor_secs=_setting("ALERTS_STUCK_FLOOR_SECS", 60.0),
            stuck_ceiling_secs=_setting("ALERTS_STUCK_CEILING_SECS", 3600.0),
            admission_wait_secs=_setting("ALERTS_ADMISSION_WAIT_SECS", 300.0), failure_window_secs=window)

    def apply(self, conditions: list[Condition], now: float,
              effective: Callable[[str, str], specs.Effective]) -> None:
        """The lifecycle step for this evaluation's conditions (inside the fenced transaction)."""
        when = datetime.fromtimestamp(now, timezone.utc)
        open_alerts = {(a.rule, a.engine, a.subject): a for a in Alert.objects.filter(state__in=specs.OPEN_STATES)}
        notifiers: list[Notifier] | None = None
        fired: list[Alert] = []
        self.next_due = None
        for cond in conditions:
            key = (cond.rule, cond.engine, cond.subject)
            alert = open_alerts.pop(key, None)
            for_secs = effective(cond.rule, cond.engine).for_secs
            if alert is None:
                alert = Alert(rule=cond.rule, engine=cond.engine[:128], subject=cond.subject[:200],
                              severity=specs.RULES[cond.rule].severity, state=specs.PENDING, started_at=when,
                              last_seen_at=when)
                _describe(alert, cond, 0.0)
                if for_secs <= 0:
                    alert.state, alert.fired_at = specs.FIRING, when
                    fired.append(alert)
                else:
                    self.next_due = min(self.next_due or now + for_secs, now + for_secs)
                alert.save()
                continue
            held = (when - alert.started_at).total_seconds()
            if alert.state == specs.PENDING and held < for_secs:
                due = alert.started_at.timestamp() + for_secs
                self.next_due = due if self.next_due is None else min(self.next_due, due)
            if alert.state == specs.PENDING and held >= for_secs:
                alert.state, alert.fired_at = specs.FIRING, when
                _describe(alert, cond, held)
                alert.last_seen_at = when
                alert.save()
                fired.append(alert)
            elif (when - alert.last_seen_at).total_seconds() >= TOUCH_EVERY_SECS:
                _describe(alert, cond, held)
                alert.last_seen_at = when
                alert.save(update_fields=["message", "value", "last_seen_at"])
        resolved = []
        for alert in open_alerts.values():
            if alert.state == specs.PENDING:
                alert.delete()
                continue
            alert.state, alert.resolved_at, alert.last_seen_at = specs.RESOLVED, when, when
            alert.save(update_fields=["state", "resolved_at", "last_seen_at"])
            resolved.append(alert)
        if fired or resolved:
            notifiers = list(Notifier.objects.filter(enabled=True))
        if notifiers:
            notices = [Notice(notifier=n, alert=a, event=specs.FIRING, created_at=when)
                       for a in fired if not _silenced(a, when) for n in notifiers]
            told = set(Notice.objects.filter(alert__in=resolved, event=specs.FIRING).values_list("alert_id",
                                                                                                 "notifier_id"))
            notices += [Notice(notifier=n, alert=a, event=specs.RESOLVED, created_at=when)
                        for a in resolved for n in notifiers if (a.id, n.id) in told]
            Notice.objects.bulk_create(notices, ignore_conflicts=True)


def _describe(alert: Alert, cond: Condition, held: float) -> None:
    alert.value = cond.value
    alert.message = cond.message.replace("{held}", fmt_secs(held))[:2000]


def _silenced(alert: Alert, when: datetime) -> bool:
    return alert.silenced_until is not None and alert.silenced_until > when


def prune(days: float, now: datetime | None = None) -> int:
    """Drop resolved alerts and finished deliveries older than `days` (0 keeps them); how many alerts."""
    if days <= 0:
        return 0
    from statuspanel.alerts.models import Delivery

    horizon = (now or datetime.now(timezone.utc)) - timedelta(days=days)
    deleted, _ = Alert.objects.filter(state=specs.RESOLVED, resolved_at__lt=horizon).delete()
    Delivery.objects.filter(created_at__lt=horizon).exclude(state="sending").delete()
    DeliveryAttempt.objects.filter(at__lt=horizon).delete()
    return deleted
