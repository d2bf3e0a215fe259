"""Registered circom circuits inside the engine: met at claim time, loaded once, proved like any kind.

Circuits can be registered while an engine runs, so they are not prepared at start like the
built-in kinds: the feeder asks `CircuitKinds.claimed(row)` for each claimed job whose kind is not
built in. That loads the circuit's converted key in this process (the verifier needs its key, a
CUDA worker proves in-thread with it), records the `CircuitRef` pool children load it by, and the
partition's memory reservation; `task(job, index)` is the synthesis call for one partition (the
child reads that partition's stored witness or input from the job's directory).
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from gpu_engine.circom import api as circom_api
from gpu_engine.circom import registry
from gpu_engine.circom.jobs import item_path
from gpu_engine.kinds import PRIORITY_NORMAL, ProofKind
from gpu_engine.models import CircuitJob, ProofJob

log = logging.getLogger("gpu_engine.engine")


class CircuitUnavailable(RuntimeError):
    """A claimed circuit job that cannot be proved here (its circuit or its inputs are gone)."""


class CircuitKinds:
    def __init__(self, params: dict[str, Any], refs: dict[str, Any], part_bytes: dict[str, int],
                 budget_bytes: int) -> None:
        self.params, self.refs, self.part_bytes, self.budget_bytes = params, refs, part_bytes, budget_bytes
        self._items: dict[str, tuple[CircuitJob, circom_api.CircuitRef]] = {}
        self._lock = threading.Lock()

    def claimed(self, row: ProofJob) -> ProofKind:
        """The kind of a claimed circuit job (its partitions are the job's items); loads the key once."""
        cj = CircuitJob.objects.select_related("circuit").filter(job_id=row.pk).first()
        if cj is None:
            raise CircuitUnavailable(f"proof kind {row.proof_kind!r} is neither built in nor a job of a "
                                     "registered circuit")
        if not cj.items_dir:
            raise CircuitUnavailable(f"job {row.job_id}: its stored witnesses/inputs were removed after it finished "
                                     "(CIRCUIT_ITEMS_RETENTION_DAYS); submit them again")
        circuit = cj.circuit
        ref = registry.circuit_ref(circuit)
        with self._lock:
            if self.refs.get(circuit.name) != ref:
                try:
                    key = circom_api.load(ref)
                except (OSError, ValueError) as exc:
                    raise CircuitUnavailable(f"circuit {circuit.name}: its converted key cannot be loaded: {exc}"
                                             ) from None
                nbytes = circom_api.partition_bytes(key)
                if nbytes > self.budget_bytes:
                    raise CircuitUnavailable(f"one {circuit.name} partition needs {nbytes} bytes but the memory "
                                             f"budget is {self.budget_bytes}; raise --memory-budget")
                self.params[circuit.name], self.part_bytes[circuit.name] = key, nbytes
                self.refs[circuit.name] = ref
            self._items[row.job_id] = (cj, ref)
        return ProofKind(circuit.name, circuit.label, row.total_partitions, PRIORITY_NORMAL, "normal")

    def task(self, job_id: str, index: int) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        with self._lock:
            cj, ref = self._items[job_id]
        return circom_api.synthesize, (ref, job_id, index, str(item_path(cj, index)))

    def forget(self, job_id: str) -> None:
        with self._lock:
            self._items.pop(job_id, None)
