from __future__ import annotations

from django.apps import AppConfig


class StatusPanelConfig(AppConfig):
    name = "statuspanel"
    verbose_name = "Status panel"

    def ready(self) -> None:
        from statuspanel import checks  # noqa: F401 - registers the system checks
