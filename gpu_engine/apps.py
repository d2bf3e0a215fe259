from __future__ import annotations

from django.apps import AppConfig


class GpuEngineConfig(AppConfig):
    name = "gpu_engine"
    verbose_name = "GPU proving engine"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registered circuits are proof kinds with labels of their own (kinds.py stays Django-free).
        from django.db.models.signals import post_delete

        from gpu_engine import kinds, validation
        from gpu_engine.circom import jobs, registry
        from gpu_engine.models import CircuitJob

        kinds.set_label_source(registry.circuit_label)
        validation.set_circuit_source(registry.circuit_names)
        # A deleted circuit job takes its stored witnesses or inputs with it.
        post_delete.connect(jobs.remove_items, sender=CircuitJob, dispatch_uid="circuit-job-items")
