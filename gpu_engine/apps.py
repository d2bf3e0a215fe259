from __future__ import annotations

from django.apps import AppConfig


class GpuEngineConfig(AppConfig):
    name = "gpu_engine"
    verbose_name = "GPU proving engine"
    default_auto_field = "django.db.models.BigAutoField"
