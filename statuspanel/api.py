"""The job API: submit, list, inspect, fetch the proof, cancel. JSON in, JSON out.

Errors are `{"error": "..."}` with the status code that says what went wrong (400 bad input,
401 no credentials, 404 unknown job, 405 wrong method, 409 conflicting state).
"""
from __future__ import annotations

import functools
import json
from typing import Any, Callable

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse

from gpu_engine import queue, validation
from gpu_engine.models import JobStatus, ProofJob
from statuspanel.auth import api_auth_required

SUBMIT_FIELDS = {"proof_kind", "job_id", "priority"}
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


def error(message: str, code: int, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=code)


def methods(*allowed: str) -> Callable:
    """Like require_http_methods, but answers 405 in JSON with an Allow header."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in allowed:
                response = error(f"method {request.method} not allowed; use {', '.join(allowed)}", 405)
                response["Allow"] = ", ".join(allowed)
                return response
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


def _get_job(job_id: str) -> ProofJob | None:
    return ProofJob.objects.filter(job_id=job_id).first()


def _not_found(job_id: str) -> JsonResponse:
    return error(f"no job with id {job_id!r}", 404)


def _parse_body(request: HttpRequest) -> dict[str, Any]:
    try:
        body = json.loads(request.body.decode("utf-8") or "null")
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
    unknown = sorted(set(body) - SUBMIT_FIELDS)
    if unknown:
        raise queue.JobError(f"unknown field(s): {', '.join(unknown)}; accepted: {', '.join(sorted(SUBMIT_FIELDS))}")
    if "proof_kind" not in body:
        raise queue.JobError(f"proof_kind is required; valid kinds: {', '.join(validation.valid_kinds(circuits=True))}")
    return body


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
            body = _parse_body(request)
            # submit_job applies the one rule set (gpu_engine/validation.py) before storing anything.
            job, created = queue.submit_job(body["proof_kind"], body.get("job_id"), body.get("priority"))
            return JsonResponse(job.to_dict(), status=201 if created else 200)
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
    if job.status != JobStatus.DONE or job.bundle is None:
        return error(f"job {job_id!r} is {job.status}; its proof is available once it is done", 409, status=job.status)
    return JsonResponse(job.bundle)


@api_auth_required
@methods("POST")
def job_cancel(request: HttpRequest, job_id: str) -> HttpResponse:
    try:
        job = queue.cancel_job(job_id)
    except queue.JobError as exc:
        return error(str(exc), exc.status)
    return JsonResponse(job.to_dict())


def _default_or_json(request: HttpRequest, fallback: Callable[..., HttpResponse], message: str, code: int,
                     exception: Exception | None) -> HttpResponse:
    if request.path.startswith("/api/"):
        return error(message, code)
    return fallback(request, exception)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: API clients get JSON (e.g. an id holding an encoded slash), browsers the usual page."""
    from django.views.defaults import page_not_found

    return _default_or_json(request, page_not_found, f"no such API path {request.path!r}", 404, exception)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400: requests Django refuses before the view (too many fields, bad host) stay JSON on the API."""
    from django.views.defaults import bad_request as default

    return _default_or_json(request, default, f"bad request: {exception or 'refused'}", 400, exception)
