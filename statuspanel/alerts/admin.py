"""Alerts in the Django admin: the full history (filters by rule, engine, state), rule settings and
per-engine overrides (the forms' one rule set), notifiers with write-only URL and secret, and every
delivery with its attempts."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest

from statuspanel.alerts.forms import NotifierForm, RuleOverrideForm, RuleSettingForm
from statuspanel.alerts.models import Alert, Delivery, DeliveryAttempt, Notifier, RuleOverride, RuleSetting

# The stubs' generic admin classes, which Django's own are not at run time.
if TYPE_CHECKING:
    _ModelAdmin = admin.ModelAdmin[Any]
    _AttemptInline = admin.TabularInline[DeliveryAttempt, Delivery]
else:
    _ModelAdmin, _AttemptInline = admin.ModelAdmin, admin.TabularInline


class _ReadOnly(_ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Alert)
class AlertAdmin(_ReadOnly):
    list_display = ("rule", "engine", "subject", "state", "severity", "started_at", "fired_at", "resolved_at",
                    "acknowledged_by", "silenced_until", "message")
    list_filter = ("rule", "state", "severity", "engine")
    search_fields = ("engine", "subject", "message")
    date_hierarchy = "started_at"


@admin.register(RuleSetting)
class RuleSettingAdmin(_ModelAdmin):
    form = RuleSettingForm
    list_display = ("rule", "enabled", "threshold", "for_secs")


@admin.register(RuleOverride)
class RuleOverrideAdmin(_ModelAdmin):
    form = RuleOverrideForm
    list_display = ("rule", "engine", "enabled", "threshold", "for_secs")
    list_filter = ("rule",)
    search_fields = ("engine",)


@admin.register(Notifier)
class NotifierAdmin(_ModelAdmin):
    form = NotifierForm
    list_display = ("name", "kind", "target", "has_secret", "enabled", "created_at")
    list_filter = ("kind", "enabled")
    fieldsets = ((None, {"fields": ("name", "kind", "enabled")}),
                 ("Webhook / Slack (write-only)", {"fields": ("url", "secret", "clear_secret")}),
                 ("Email", {"fields": ("recipients",)}))

    @admin.display(description="sends to")
    def target(self, obj: Notifier) -> str:
        return obj.target()

    @admin.display(boolean=True, description="secret")
    def has_secret(self, obj: Notifier) -> bool:
        return bool(obj.secret)


class AttemptInline(_AttemptInline):
    model = DeliveryAttempt
    extra = 0
    max_num = 0
    can_delete = False
    fields = ("number", "at", "ok", "status", "error", "duration_ms")
    readonly_fields = fields


@admin.register(Delivery)
class DeliveryAdmin(_ReadOnly):
    list_display = ("notifier_name", "created_at", "state", "alerts", "attempt_count", "summary")
    list_filter = ("state", "notifier_name")
    date_hierarchy = "created_at"
    inlines = [AttemptInline]
    readonly_fields = ("notifier_name", "created_at", "state", "alerts", "summary", "body", "finished_at")
    exclude = ("notifier",)

    @admin.display(description="attempts")
    def attempt_count(self, obj: Delivery) -> int:
        return obj.attempts.count()


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(_ReadOnly):
    list_display = ("delivery", "number", "at", "ok", "status", "error", "duration_ms")
    list_filter = ("ok",)
