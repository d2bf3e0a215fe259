"""The alerts' rows: alerts and their history, rule settings, notifiers, deliveries and the lease.

An `Alert` is one (rule, engine, subject) episode: at most one open (pending or firing) at a time,
enforced by a partial unique constraint. A `Notice` is the outbox: one row per (notifier, alert,
event), written in the same transaction as the transition that causes it (so a hand-over can
neither lose nor repeat it); the dispatcher folds notices into a `Delivery` (one message) whose
every try is a `DeliveryAttempt`. `EvaluatorLease` is the one-evaluator-per-deployment row.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models
from django.db.models import Q

from statuspanel.alerts import specs

RULE_CHOICES = [(name, name) for name in specs.RULES]
STATE_CHOICES = [(s, s) for s in specs.STATES]
SEVERITY_CHOICES = [(specs.WARNING, specs.WARNING), (specs.CRITICAL, specs.CRITICAL)]
EVENT_CHOICES = [(specs.FIRING, specs.FIRING), (specs.RESOLVED, specs.RESOLVED)]
WEBHOOK, SLACK, EMAIL = "webhook", "slack", "email"
NOTIFIER_KINDS = (WEBHOOK, SLACK, EMAIL)


class Alert(models.Model):
    rule = models.CharField(max_length=40, choices=RULE_CHOICES, db_index=True)
    engine = models.CharField(max_length=128, db_index=True)
    subject = models.CharField(max_length=200, help_text="worker, partition, job, source or kind")
    severity = models.CharField(max_length=16, choices=SEVERITY_CHOICES)
    state = models.CharField(max_length=16, choices=STATE_CHOICES, db_index=True)
    value = models.FloatField(null=True, blank=True, help_text="the value that made the condition true")
    message = models.TextField()
    started_at = models.DateTimeField(help_text="when the condition was first seen true")
    fired_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField()
    acknowledged_by = models.CharField(max_length=150, blank=True, default="")
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    silenced_until = models.DateTimeField(null=True, blank=True)
    silenced_by = models.CharField(max_length=150, blank=True, default="")
    silenced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-started_at", "-id")
        constraints = [models.UniqueConstraint(fields=["rule", "engine", "subject"],
                                               condition=Q(state__in=specs.OPEN_STATES), name="alert_one_open")]
        indexes = [models.Index(fields=["state", "resolved_at"], name="alert_state_resolved")]

    def __str__(self) -> str:
        return f"{self.rule} {self.engine} {self.subject} ({self.state})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "rule": self.rule, "engine": self.engine, "subject": self.subject,
            "severity": self.severity, "state": self.state, "value": self.value, "message": self.message,
            "started_at": _iso(self.started_at), "fired_at": _iso(self.fired_at),
            "resolved_at": _iso(self.resolved_at),
            "acknowledged_by": self.acknowledged_by or None, "acknowledged_at": _iso(self.acknowledged_at),
            "silenced_until": _iso(self.silenced_until), "silenced_by": self.silenced_by or None,
        }


class RuleSetting(models.Model):
    """A built-in rule's deployment-wide setting (a missing row means the defaults of specs.RULES)."""

    rule = models.CharField(max_length=40, choices=RULE_CHOICES, unique=True)
    enabled = models.BooleanField(default=True)
    threshold = models.FloatField(null=True, blank=True, help_text="empty: the rule's default")
    for_secs = models.FloatField(null=True, blank=True, help_text="empty: the rule's default")

    class Meta:
        ordering = ("rule",)

    def __str__(self) -> str:
        return self.rule


class RuleOverride(models.Model):
    """One engine's exception to a rule's setting (empty fields follow the rule's setting)."""

    rule = models.CharField(max_length=40, choices=RULE_CHOICES)
    engine = models.CharField(max_length=128)
    enabled = models.BooleanField(null=True, blank=True, help_text="empty: as the rule")
    threshold = models.FloatField(null=True, blank=True)
    for_secs = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ("rule", "engine")
        constraints = [models.UniqueConstraint(fields=["rule", "engine"], name="ruleoverride_unique")]

    def __str__(self) -> str:
        return f"{self.rule} @ {self.engine}"


class Notifier(models.Model):
    name = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=16, choices=[(k, k) for k in NOTIFIER_KINDS])
    url = models.CharField(max_length=1000, blank=True, default="")  # write-only: may carry a token
    secret = models.CharField(max_length=500, blank=True, default="")  # write-only: the HMAC key
    recipients = models.JSONField(default=list, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name

    def target(self) -> str:
        """Where it sends, without secrets: the URL's scheme and host, or the addresses."""
        if self.kind == EMAIL:
            return ", ".join(self.recipients or [])
        from urllib.parse import urlsplit

        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.hostname or ''}{':%d' % parts.port if parts.port else ''}/…"


class Delivery(models.Model):
    """One message to one notifier, folding every notice gathered for it."""

    SENDING, SENT, FAILED = "sending", "sent", "failed"
    notifier = models.ForeignKey(Notifier, null=True, on_delete=models.SET_NULL, related_name="deliveries")
    notifier_name = models.CharField(max_length=64)
    created_at = models.DateTimeField(db_index=True)
    state = models.CharField(max_length=16, choices=[(s, s) for s in (SENDING, SENT, FAILED)], default=SENDING)
    alerts = models.PositiveIntegerField(default=0, help_text="alert events in the message")
    summary = models.CharField(max_length=500, blank=True, default="")
    body = models.JSONField(default=dict, blank=True, help_text="the webhook body (no secrets in it)")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.notifier_name} {self.created_at:%Y-%m-%d %H:%M:%S} {self.state}"


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    at = models.DateTimeField()
    ok = models.BooleanField()
    status = models.IntegerField(null=True, blank=True, help_text="HTTP status or SMTP outcome")
    error = models.CharField(max_length=500, blank=True, default="")
    duration_ms = models.FloatField()

    class Meta:
        ordering = ("delivery_id", "number")

    def __str__(self) -> str:
        return f"attempt {self.number} {'ok' if self.ok else self.error}"


class Notice(models.Model):
    """The outbox: an alert event owed to a notifier; `delivery` is set when a message takes it."""

    notifier = models.ForeignKey(Notifier, on_delete=models.CASCADE, related_name="notices")
    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="notices")
    event = models.CharField(max_length=16, choices=EVENT_CHOICES)
    created_at = models.DateTimeField()
    delivery = models.ForeignKey(Delivery, null=True, blank=True, on_delete=models.SET_NULL, related_name="notices")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["notifier", "alert", "event"], name="notice_once")]
        indexes = [models.Index(fields=["delivery", "created_at"], name="notice_outbox")]


class EvaluatorLease(models.Model):
    """The one row naming the process that evaluates: taken when expired, renewed while held."""

    name = models.CharField(max_length=32, unique=True)
    holder = models.CharField(max_length=200, blank=True, default="")
    expires_at = models.DateTimeField()
    acquired_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name}: {self.holder} until {self.expires_at}"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None

