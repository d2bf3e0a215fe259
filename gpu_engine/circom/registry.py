"""Registered circuits as proof kinds: every circuit-name lookup goes through here.

`circuit_names()` / `get_circuit(name)` are what kind validation calls (`validate_kind` with
circuits allowed); `circuit_ref` gives pool children what they need by path; `circuit_label` is
the panel's full label (cached briefly: the tracker and the templates ask often).
"""
from __future__ import annotations

import re
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, SynchronousOnlyOperation
from django.db import DatabaseError

from gpu_engine.circom.api import CircuitRef
from gpu_engine.circom.sandbox import WasmBounds
from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.models import Circuit

NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,31}")
_LABEL_TTL = 5.0
_labels: dict[str, tuple[float, str | None]] = {}
_labels_lock = threading.Lock()


def circuits_dir() -> Path:
    return Path(settings.CIRCUITS_DIR)


def circuit_names() -> list[str]:
    return list(Circuit.objects.order_by("name").values_list("name", flat=True))


def get_circuit(name: object) -> Circuit | None:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or name in PROOF_KINDS:
        return None
    return Circuit.objects.filter(name=name).first()


def path_of(relative: str) -> str:
    """An absolute path for a file stored under CIRCUITS_DIR ('' stays '')."""
    return str((circuits_dir() / relative).resolve()) if relative else ""


def witness_bounds() -> WasmBounds:
    """The box of every witness calculator run (CIRCUIT_WITNESS_TIMEOUT, CIRCUIT_WITNESS_MEMORY)."""
    try:
        return WasmBounds(float(settings.CIRCUIT_WITNESS_TIMEOUT), int(settings.CIRCUIT_WITNESS_MEMORY))
    except ValueError as exc:
        raise ImproperlyConfigured(f"CIRCUIT_WITNESS_TIMEOUT / CIRCUIT_WITNESS_MEMORY: {exc}") from None


def circuit_ref(circuit: Circuit) -> CircuitRef:
    bounds = witness_bounds()
    return CircuitRef(name=circuit.name, key_hash=circuit.zkey_sha256, key_path=path_of(circuit.key_file),
                      wasm_path=path_of(circuit.wasm_file), r1cs_path=path_of(circuit.r1cs_file),
                      witness_timeout=bounds.deadline_secs, witness_memory=bounds.memory_bytes)


def circuit_label(name: str) -> str | None:
    """The circuit's full label, or None (not a circuit, or no database access here)."""
    now = time.monotonic()
    with _labels_lock:
        hit = _labels.get(name)
    if hit is not None and now - hit[0] < _LABEL_TTL:
        return hit[1]
    try:
        label = Circuit.objects.filter(name=name).values_list("label", flat=True).first()
    except (SynchronousOnlyOperation, DatabaseError, RuntimeError):
        # A label is cosmetic and the tracker asks from any thread: an async caller, a database not
        # migrated or not reachable from here gets the cached label or none (the plain name is shown).
        return hit[1] if hit else None
    with _labels_lock:
        _labels[name] = (now, label)
    return label


def forget_labels() -> None:
    with _labels_lock:
        _labels.clear()
