from __future__ import annotations

from django.apps import AppConfig


class StatusPanelConfig(AppConfig):
    name = "statuspanel"
    verbose_name = "Status panel"
