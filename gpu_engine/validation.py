"""The one rule set for a proof job, however it arrives: API, admin form, commands, requeue, the engine.

Every entry point calls these functions, so a job is refused with the same message everywhere and
a row the engine claims is checked against the same rules it was (or should have been) stored with.
A failure is a `JobError` (a ValueError carrying the HTTP status it maps to).

Kinds: the built-in proof kinds always; with `circuits=True` also the names of registered circom
circuits (`registered_circuit_names`, the hook the circuit registry plugs into).
"""
from __future__ import annotations

import re
from typing import Any, Callable

from gpu_engine.kinds import PROOF_KINDS

JOB_ID_MAX = 128
JOB_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]*")  # fullmatch: "$" would admit a trailing newline
PRIORITY_MIN, PRIORITY_MAX = -1000, 1000


class JobError(ValueError):
    """A request about a job that cannot be honoured; `status` is the HTTP status it maps to."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


_circuit_source: Callable[[], list[str]] | None = None


def set_circuit_source(source: Callable[[], list[str]]) -> None:
    """Plug in the circuit registry (the app does at start; this module stays free of the database)."""
    global _circuit_source
    _circuit_source = source


def registered_circuit_names() -> list[str]:
    """Names of registered circom circuits accepted as proof kinds where `circuits=True`."""
    return _circuit_source() if _circuit_source is not None else []


def valid_kinds(*, circuits: bool = False) -> list[str]:
    """The kind names a job may name, in the order messages list them."""
    names = list(PROOF_KINDS)
    if circuits:
        names += [name for name in registered_circuit_names() if name not in PROOF_KINDS]
    return names


def kinds_hint(*, circuits: bool = False) -> str:
    """What a refusal lists: the built-in kinds, and with `circuits` the registered circuits apart."""
    hint = f"valid kinds: {', '.join(PROOF_KINDS)}"
    if circuits:
        names = [name for name in registered_circuit_names() if name not in PROOF_KINDS]
        hint += f"; registered circuits: {', '.join(names) if names else 'none'}"
    return hint


def validate_kind(kind: Any, *, circuits: bool = False) -> str:
    """`kind` if it names a proof kind (or, with `circuits`, a registered circuit), else JobError."""
    if not isinstance(kind, str):
        raise JobError(f"proof_kind must be a string; {kinds_hint(circuits=circuits)}")
    if not kind:
        raise JobError(f"proof_kind must not be empty; {kinds_hint(circuits=circuits)}")
    if kind not in PROOF_KINDS and kind not in valid_kinds(circuits=circuits):
        raise JobError(f"unknown proof kind {kind[:64]!r}; {kinds_hint(circuits=circuits)}")
    return kind


def validate_job_id(job_id: Any) -> str:
    if not isinstance(job_id, str):
        raise JobError(f"job_id must be a string, got {type(job_id).__name__}")
    if not job_id:
        raise JobError("job_id must not be empty")
    if len(job_id) > JOB_ID_MAX:
        raise JobError(f"job_id is {len(job_id)} characters long; the limit is {JOB_ID_MAX}")
    if not JOB_ID_RE.fullmatch(job_id):
        raise JobError(
            "job_id may contain only letters, digits and . _ : @ + - (and must start with a letter or digit)"
        )
    return job_id


def validate_priority(priority: Any) -> int:
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise JobError(f"priority must be an integer, got {priority!r}")
    if not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        raise JobError(f"priority must be between {PRIORITY_MIN} and {PRIORITY_MAX}, got {priority}")
    return priority


def row_problem(proof_kind: Any, job_id: Any, priority: Any, *, circuits: bool = True) -> str | None:
    """Why a stored job row breaks the rules (the first broken one), or None when it is sound.

    The engine calls this on every row it claims and the admin's requeue on every row it would
    put back: a row written around the entry points (directly into the database) is failed with
    this reason instead of being proved, or crashing whoever reads it."""
    for check, value in ((lambda v: validate_kind(v, circuits=circuits), proof_kind),
                         (validate_job_id, job_id), (validate_priority, priority)):
        try:
            check(value)
        except JobError as exc:
            return str(exc)
    return None
