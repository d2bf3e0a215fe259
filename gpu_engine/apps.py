from __future__ import annotations

from django.apps import AppConfig


class GpuEngineConfig(AppConfig):
    name = "gpu_engine"
    verbose_name = "GPU proving engine"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registered circuits are proof kinds with labels of their own (kinds.py stays Django-free).
        from gpu_engine import kinds
        from gpu_engine.circom import registry

        kinds.set_label_source(registry.circuit_label)
