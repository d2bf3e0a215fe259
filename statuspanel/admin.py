"""Fleet sources in the Django admin: managed with the same form as `addsource`; tokens write-only;
every state change of a source listed (when did host X drop)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from statuspanel.fleet.forms import SourceForm
from statuspanel.models import Source, SourceEvent

# The stubs' generic admin classes, which Django's own are not at run time.
if TYPE_CHECKING:
    _EventInline = admin.TabularInline[SourceEvent, Source]
    _SourceAdmin = admin.ModelAdmin[Source]
    _EventAdmin = admin.ModelAdmin[SourceEvent]
else:
    _EventInline, _SourceAdmin, _EventAdmin = admin.TabularInline, admin.ModelAdmin, admin.ModelAdmin


class SourceEventInline(_EventInline):
    model = SourceEvent
    extra = 0
    can_delete = False
    fields = ("at", "previous", "state", "reason", "error")
    readonly_fields = fields
    ordering = ("-at", "-id")
    max_num = 0

    def get_queryset(self, request: HttpRequest) -> QuerySet[SourceEvent]:
        return super().get_queryset(request).order_by("-at", "-id")

    def has_add_permission(self, request: HttpRequest, obj: Source | None = None) -> bool:
        return False


@admin.register(Source)
class SourceAdmin(_SourceAdmin):
    form = SourceForm
    list_display = ("name", "kind", "transport", "target", "interval_secs", "enabled", "state", "state_since",
                    "has_token", "last_error")
    list_filter = ("kind", "transport", "enabled", "state")
    search_fields = ("name", "url", "ssh_host", "grpc_target")
    readonly_fields = ("state", "state_since", "last_error", "ssh_host_key", "created_at")
    inlines = [SourceEventInline]
    fieldsets = (
        (None, {"fields": ("name", "kind", "transport", "interval_secs", "enabled", "price_per_hour")}),
        ("HTTP(S)", {"fields": ("url",)}),
        ("cuzk gRPC", {"fields": ("grpc_target", "grpc_tls", "grpc_ca_path")}),
        ("SSH", {"fields": ("ssh_user", "ssh_host", "ssh_port", "ssh_key_path", "remote_port",
                            "known_hosts_policy", "known_hosts_path", "ssh_host_key")}),
        ("Secret (write-only)", {"fields": ("token", "clear_token")}),
        ("Last seen by the collector", {"fields": ("state", "state_since", "last_error", "created_at")}),
    )

    @admin.display(boolean=True, description="token")
    def has_token(self, obj: Source) -> bool:
        return bool(obj.token)

    @admin.display(description="polled at")
    def target(self, obj: Source) -> str:
        return obj.target()


@admin.register(SourceEvent)
class SourceEventAdmin(_EventAdmin):
    list_display = ("source_name", "at", "previous", "state", "reason", "error")
    list_filter = ("state", "reason", "source_name")
    search_fields = ("source_name", "error")
    date_hierarchy = "at"
    readonly_fields = ("source", "source_name", "at", "previous", "state", "reason", "error")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: SourceEvent | None = None) -> bool:
        return False
