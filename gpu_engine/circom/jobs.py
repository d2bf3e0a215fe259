"""Circuit jobs: one rule set for a batch of witnesses or inputs, however it arrives (JSON with
base64 .wtns, JSON inputs, a multipart batch file), and their storage with the job.

Each witness or input is one partition, stored as a file (`<index>.wtns` or `<index>.json`)
in the job's own directory under CIRCUITS_DIR, which the CircuitJob row names; the engine's
synthesis children read them from there. Everything is checked before anything is stored: a
witness's file structure, field and wire count; an input's signals against the circuit's
(missing, unknown, non-numeric or wrong-sized: a 400 naming the signal).
"""
from __future__ import annotations

import base64
import binascii
import json
import shutil
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from gpu_engine import queue
from gpu_engine.circom import registry
from gpu_engine.circom.api import INPUT_SUFFIX, WTNS_SUFFIX
from gpu_engine.circom.binfile import CircomFormatError
from gpu_engine.circom.wtns import read_wtns
from gpu_engine.groth16.field import R
from gpu_engine.kinds import PRIORITY_NORMAL
from gpu_engine.models import Circuit, CircuitJob, ProofJob

JOBS_SUBDIR = "jobs"
CIRCUIT_FIELDS = {"proof_kind", "job_id", "priority", "witnesses", "inputs"}


def max_batch() -> int:
    return int(settings.CIRCUIT_MAX_BATCH)


def _batch(items: Any, field: str) -> list:
    if not isinstance(items, list) or not items:
        raise queue.JobError(f"{field} must be a non-empty list (one item per partition)")
    if len(items) > max_batch():
        raise queue.JobError(f"{field}: {len(items)} items, at most {max_batch()} per job (CIRCUIT_MAX_BATCH)",
                             413)
    return items


def check_witness_file(circuit: Circuit, raw: bytes, where: str) -> bytes:
    try:
        read_wtns(raw, expected_count=circuit.num_wires)
    except CircomFormatError as exc:
        raise queue.JobError(f"{where}: {exc}") from None
    return raw


def decode_witness(circuit: Circuit, item: Any, where: str) -> bytes:
    if not isinstance(item, str):
        raise queue.JobError(f"{where}: expected a base64 string of a .wtns file, got {type(item).__name__}")
    try:
        raw = base64.b64decode(item, validate=True)
    except (binascii.Error, ValueError):
        raise queue.JobError(f"{where}: not valid base64") from None
    return check_witness_file(circuit, raw, where)


def check_input(circuit: Circuit, item: Any, where: str) -> bytes:
    """One input object checked against the circuit's signals; its JSON, as stored."""
    from gpu_engine.circom.inputs import WitnessError
    from gpu_engine.circom.signals import validate_inputs, validate_with_calculator
    from gpu_engine.circom.witness import calculator_for

    if not circuit.wasm_file:
        raise queue.JobError(f"circuit {circuit.name} was registered without its .wasm: send witnesses, not inputs")
    try:
        if circuit.sym_file:  # the names are known: checked by name, without running the wasm
            validate_inputs(circuit.input_signals, item, R)
        else:  # no .sym: the wasm (in its box) says which names it takes and their sizes
            calc = calculator_for(registry.path_of(circuit.wasm_file), registry.witness_bounds())
            validate_with_calculator(calc, item)
    except WitnessError as exc:
        raise queue.JobError(f"{where}: {exc}") from None
    return json.dumps(item, separators=(",", ":")).encode()


def items_from_body(circuit: Circuit, body: dict[str, Any]) -> tuple[str, list[bytes]]:
    """(source, stored items) from a JSON body holding `witnesses` (base64) or `inputs`."""
    has_w, has_i = "witnesses" in body, "inputs" in body
    if has_w == has_i:
        raise queue.JobError(f"circuit {circuit.name}: send either witnesses (base64 .wtns files) or inputs "
                             "(objects of input signals), one per partition")
    if has_w:
        items = _batch(body["witnesses"], "witnesses")
        return CircuitJob.WITNESSES, [decode_witness(circuit, x, f"witnesses[{i}]") for i, x in enumerate(items)]
    items = _batch(body["inputs"], "inputs")
    return CircuitJob.INPUTS, [check_input(circuit, x, f"inputs[{i}]") for i, x in enumerate(items)]


def inputs_from_batch_file(circuit: Circuit, raw: bytes, where: str) -> list[bytes]:
    """A batch file of inputs: a JSON list of objects, or JSON Lines (one object per line)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise queue.JobError(f"{where}: not UTF-8 text") from None
    try:
        parsed = json.loads(text)
        items = parsed if isinstance(parsed, list) else [parsed]
    except (json.JSONDecodeError, RecursionError, ValueError):
        items = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except (json.JSONDecodeError, RecursionError, ValueError) as exc:
                raise queue.JobError(f"{where} line {n}: malformed JSON ({str(exc)[:80]})") from None
    items = _batch(items, where)
    return [check_input(circuit, x, f"{where}[{i}]") for i, x in enumerate(items)]


def _write_items(source: str, items: list[bytes]) -> str:
    suffix = WTNS_SUFFIX if source == CircuitJob.WITNESSES else INPUT_SUFFIX
    rel = f"{JOBS_SUBDIR}/{uuid.uuid4().hex}"
    directory = registry.circuits_dir() / rel
    directory.mkdir(parents=True)
    for i, raw in enumerate(items):
        (directory / f"{i}{suffix}").write_bytes(raw)
    return rel


def submit(circuit: Circuit, source: str, items: list[bytes], job_id: Any = None,
           priority: Any = None) -> tuple[ProofJob, bool]:
    """Store the items and the job (queued); the same job id again returns the stored job."""
    jid = queue.new_job_id(circuit.name) if job_id is None else queue.validate_job_id(job_id)
    prio = PRIORITY_NORMAL if priority is None else queue.validate_priority(priority)
    existing = ProofJob.objects.filter(job_id=jid).first()
    if existing is None:
        rel = _write_items(source, items)  # files first: a stored job always finds its items
        stored = False
        try:
            with transaction.atomic():
                job = ProofJob.objects.create(job_id=jid, proof_kind=circuit.name, priority=prio,
                                              total_partitions=len(items))
                CircuitJob.objects.create(job=job, circuit=circuit, source=source, items_dir=rel)
            stored = True
            return job, True
        except IntegrityError:  # the same id stored meanwhile by a concurrent request
            existing = ProofJob.objects.get(job_id=jid)
        finally:
            if not stored:
                shutil.rmtree(registry.circuits_dir() / rel, ignore_errors=True)
    if existing.proof_kind != circuit.name:
        raise queue.JobError(f"job {jid!r} already exists with proof kind {existing.proof_kind!r}", status=409)
    return existing, False


def item_path(circuit_job: CircuitJob, index: int) -> Path:
    suffix = WTNS_SUFFIX if circuit_job.source == CircuitJob.WITNESSES else INPUT_SUFFIX
    return registry.circuits_dir() / circuit_job.items_dir / f"{index}{suffix}"


def remove_items(sender: type, instance: CircuitJob, **kwargs: Any) -> None:
    """post_delete of a CircuitJob (its job deleted, e.g. from the admin): its stored items go too."""
    if instance.items_dir:
        shutil.rmtree(registry.circuits_dir() / instance.items_dir, ignore_errors=True)
