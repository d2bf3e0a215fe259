"""The job API: submit, list, inspect, fetch the proof, cancel. JSON in, JSON out.

Errors are `{"error": "..."}` with the status code that says what went wrong (400 bad input,
401 no credentials, 404 unknown job, 405 wrong method, 409 conflicting state).
"""
from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse

from gpu_engine import queue, validation
from gpu_engine.circom import jobs as circuit_jobs
from gpu_engine.circom import registry, snarkjs_export
from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.models import Circuit, CircuitJob, JobStatus, ProofJob
from statuspanel.api.responses import error, methods
from statuspanel.auth import api_auth_required
from vastmanager.limits import refusal_message

SUBMIT_FIELDS = {"proof_kind", "job_id", "priority"}
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


def _get_job(job_id: str) -> ProofJob | None:
    return ProofJob.objects.filter(job_id=job_id).first()


def _not_found(job_id: str) -> JsonResponse:
    return error(f"no job with id {job_id!r}", 404)


def _parse_body(request: HttpRequest, raw: bytes | None = None) -> dict[str, Any]:
    try:
        body = json.loads((request.body if raw is None else raw).decode("utf-8") or "null")
    except RequestDataTooBig:
        raise queue.JobError("request body too large", 413) from None
    except UnicodeDecodeError:
        raise queue.JobError("request body is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise queue.JobError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:  # a number over Python's digit limit; nesting too deep
        raise queue.JobError(f"malformed JSON: {str(exc)[:120]}") from None
    if not isinstance(body, dict):
        raise queue.JobError('the body must be a JSON object such as {"proof_kind": "porep-c2"}')
    if "proof_kind" not in body:
        raise queue.JobError(f"proof_kind is required; {validation.kinds_hint(circuits=True)}")
    validation.validate_kind(body["proof_kind"], circuits=True)  # an unknown kind is named before its fields
    accepted = circuit_jobs.CIRCUIT_FIELDS if _is_circuit(body["proof_kind"]) else SUBMIT_FIELDS
    unknown = sorted(set(body) - accepted)
    if unknown:
        raise queue.JobError(f"unknown field(s): {', '.join(unknown)}; accepted: {', '.join(sorted(accepted))}")
    return body


def _is_circuit(kind: Any) -> bool:
    return isinstance(kind, str) and kind not in PROOF_KINDS and registry.get_circuit(kind) is not None


def _read_body(request: HttpRequest) -> bytes:
    """The raw body, up to CIRCUIT_MAX_BODY (circuit batches are larger than Django's form limit;
    an oversized body is refused from its Content-Length before it is read)."""
    limit = int(settings.CIRCUIT_MAX_BODY)
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise queue.JobError("malformed Content-Length") from None
    if length > limit:
        raise queue.JobError(f"request body of {length} bytes is over the limit of {limit} (CIRCUIT_MAX_BODY)", 413)
    raw = request.read(limit + 1)
    if len(raw) > limit:
        raise queue.JobError(f"request body is over the limit of {limit} bytes (CIRCUIT_MAX_BODY)", 413)
    return raw


def _submit(request: HttpRequest) -> JsonResponse:
    if request.content_type == "multipart/form-data":
        return _submit_multipart(request)
    raw = _read_body(request)
    body = _parse_body(request, raw)
    kind = body["proof_kind"]
    if not _is_circuit(kind):
        limit = int(settings.MAX_REQUEST_BYTES)
        if len(raw) > limit:  # only circuit batches may use CIRCUIT_MAX_BODY
            raise queue.JobError(refusal_message(limit, len(raw)), 413)
        job, created = queue.submit_job(kind, body.get("job_id"), body.get("priority"))
        return JsonResponse(job.to_dict(), status=201 if created else 200)
    circuit = registry.get_circuit(kind)
    if circuit is None:  # removed since _is_circuit looked
        raise queue.JobError(f"proof kind {kind} is no longer registered")
    source, items = circuit_jobs.items_from_body(circuit, body)
    job, created = circuit_jobs.submit(circuit, source, items, body.get("job_id"), body.get("priority"))
    return JsonResponse(job.to_dict(), status=201 if created else 200)


def _submit_multipart(request: HttpRequest) -> JsonResponse:
    """A batch as a file: fields proof_kind [job_id] [priority]; files `inputs` (a JSON list of input
    objects, or JSON Lines) or one `witness` file per partition (.wtns, sent as is)."""
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    if length > int(settings.CIRCUIT_MAX_BODY):
        raise queue.JobError(f"request body of {length} bytes is over the limit of {settings.CIRCUIT_MAX_BODY} "
                             "(CIRCUIT_MAX_BODY)", 413)
    post, files = request.POST, request.FILES
    unknown = sorted((set(post) - {"proof_kind", "job_id", "priority"}) | (set(files) - {"inputs", "witness"}))
    if unknown:
        raise queue.JobError(f"unknown form field(s): {', '.join(unknown)}; accepted: proof_kind, job_id, "
                             "priority and a file: inputs, or witness (repeated)")
    kind = validation.validate_kind(post.get("proof_kind"), circuits=True)
    circuit = registry.get_circuit(kind)
    if circuit is None:
        raise queue.JobError(f"proof kind {kind} takes no batch file: only registered circuits do")
    raw_priority = post.get("priority")
    priority: int | None = None
    if raw_priority is not None:
        try:
            priority = int(raw_priority)
        except ValueError:
            raise queue.JobError(f"priority must be an integer, got {raw_priority!r}") from None
    witnesses, inputs = files.getlist("witness"), files.getlist("inputs")
    if bool(witnesses) == bool(inputs):
        raise queue.JobError("send either one `inputs` file or `witness` files (one per partition)")
    if inputs:
        if len(inputs) > 1:
            raise queue.JobError("send one `inputs` file (a JSON list or JSON Lines)")
        source, items = CircuitJob.INPUTS, circuit_jobs.inputs_from_batch_file(circuit, inputs[0].read(), "inputs")
    else:
        if len(witnesses) > circuit_jobs.max_batch():
            raise queue.JobError(f"witness: {len(witnesses)} files, at most {circuit_jobs.max_batch()} per job "
                                 "(CIRCUIT_MAX_BATCH)", 413)
        source = CircuitJob.WITNESSES
        items = [circuit_jobs.check_witness_file(circuit, f.read(), f"witness[{i}] ({f.name})")
                 for i, f in enumerate(witnesses)]
    job, created = circuit_jobs.submit(circuit, source, items, post.get("job_id"), priority)
    return JsonResponse(job.to_dict(), status=201 if created else 200)


def _positive_int(raw: str | None, name: str, default: int, maximum: int) -> int:
    if raw is None or raw == "":
        return default
    # ASCII digits only: int() would also read "1_0" as 10, " 7" and "+7" as 7, and other scripts' digits.
    if not (raw.isascii() and raw.isdigit()):
        raise queue.JobError(f"{name} must be a positive integer, got {raw[:40]!r}")
    value = int(raw.lstrip("0")[:20] or "0")  # a 20-digit prefix already says "too large"
    if value < 1 or value > maximum:
        raise queue.JobError(f"{name} must be between 1 and {maximum}, got {raw[:40]}")
    return value


@api_auth_required
@methods("GET", "POST")
def jobs(request: HttpRequest) -> HttpResponse:
    """GET: list jobs (filters status, kind; page, page_size). POST: submit a job."""
    try:
        if request.method == "POST":
            return _submit(request)
        return _list(request)
    except queue.JobError as exc:
        return error(str(exc), exc.status)


def _list(request: HttpRequest) -> JsonResponse:
    qs = ProofJob.objects.all().order_by("-submitted_at", "-id")
    status = request.GET.get("status")
    if status:
        if status not in JobStatus.values:
            raise queue.JobError(f"unknown status {status!r}; valid statuses: {', '.join(JobStatus.values)}")
        qs = qs.filter(status=status)
    kind = request.GET.get("kind")
    if kind:
        qs = qs.filter(proof_kind=validation.validate_kind(kind, circuits=True))
    page = _positive_int(request.GET.get("page"), "page", 1, 10**9)
    size = _positive_int(request.GET.get("page_size"), "page_size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    total = qs.count()
    start = (page - 1) * size
    rows = list(qs.defer("bundle")[start : start + size])
    return JsonResponse(
        {
            "jobs": [job.to_dict() for job in rows],
            "page": page,
            "page_size": size,
            "total": total,
            "has_next": start + size < total,
        }
    )


@api_auth_required
@methods("GET")
def job_detail(request: HttpRequest, job_id: str) -> HttpResponse:
    job = ProofJob.objects.defer("bundle").filter(job_id=job_id).first()
    if job is None:
        return _not_found(job_id)
    data = job.to_dict()
    # Where the job's time went: waiting in the queue (submitted to claimed) or being proved (claimed to done).
    data["queue_wait_secs"] = job.queue_wait_secs()
    data["compute_secs"] = job.duration_secs()
    data["partition_runs"] = [
        {
            "index": run.index,
            "attempt": run.attempt,
            "state": run.state,
            "synth_ms": run.synth_ms,
            "gpu_ms": run.gpu_ms,
            "finalize_ms": run.finalize_ms,
            "worker_id": run.worker_id,
            "gpu_ordinal": run.gpu_ordinal,
            "engine_id": run.engine_id,
            "error": run.error or None,
        }
        for run in job.partition_runs.all()
    ]
    return JsonResponse(data)


@api_auth_required
@methods("GET")
def job_proof(request: HttpRequest, job_id: str) -> HttpResponse:
    job = _get_job(job_id)
    if job is None:
        return _not_found(job_id)
    fmt = request.GET.get("format", "bundle")
    if fmt not in ("bundle", "snarkjs"):
        return error(f"unknown format {fmt[:40]!r}; use bundle (default) or snarkjs", 400)
    if fmt == "snarkjs" and not _is_circuit(job.proof_kind):
        return error(f"format=snarkjs is for circuit jobs; {job.proof_kind} proofs come as a bundle", 400)
    if job.status != JobStatus.DONE or job.bundle is None:
        return error(f"job {job_id!r} is {job.status}; its proof is available once it is done", 409, status=job.status)
    if fmt == "snarkjs":
        return JsonResponse(snarkjs_export.job_proofs(job.bundle))
    return JsonResponse(job.bundle)


@api_auth_required
@methods("GET")
def circuits(request: HttpRequest) -> HttpResponse:
    """The registered circuits (proof kinds of their own)."""
    return JsonResponse({"circuits": [c.to_dict() for c in Circuit.objects.order_by("name")]})


@api_auth_required
@methods("GET")
def circuit_vkey(request: HttpRequest, name: str) -> HttpResponse:
    """The circuit's verifying key as snarkjs's verification_key.json."""
    circuit = registry.get_circuit(name)
    if circuit is None:
        return error(f"no circuit named {name[:64]!r}", 404)
    return JsonResponse(circuit.vkey)


@api_auth_required
@methods("POST")
def job_cancel(request: HttpRequest, job_id: str) -> HttpResponse:
    try:
        job = queue.cancel_job(job_id)
    except queue.JobError as exc:
        return error(str(exc), exc.status)
    return JsonResponse(job.to_dict())
