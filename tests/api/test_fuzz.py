"""Generated garbage against the HTTP API: always an answer (never 5xx), 4xx in JSON, no stray job rows.

Each property sends what hypothesis makes up (JSON values, raw bytes, wrong field types, huge and
deeply nested bodies, odd query strings, ids, methods) and checks that the server answers with a
status and message, stores nothing it rejected, and still serves a valid request afterwards.
"""
from __future__ import annotations

import json
import re
from urllib.parse import quote, urlencode

import pytest
from django.conf import settings as django_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.models import JobStatus, ProofJob
from tests.credentials import AUTH, TOKEN

DOCUMENTED_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}")
FUZZ = settings(max_examples=100, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FEW = settings(FUZZ, max_examples=25)

pytestmark = pytest.mark.django_db

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
odd_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
wrong_for_string = st.none() | st.booleans() | st.integers() | st.floats() | st.lists(st.integers(), max_size=3) \
    | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)


def assert_answered(response, *, json_error: bool = True) -> None:
    """Never a server error; a client error says what is wrong, in JSON `{"error": ...}`."""
    assert response.status_code < 500, response.content[:300]
    if 400 <= response.status_code < 500 and json_error:
        assert response["Content-Type"].startswith("application/json"), (response.status_code, response.content[:300])
        message = response.json()["error"]
        assert isinstance(message, str) and message


def post_body(client, raw: str | bytes):
    return client.post("/api/jobs", data=raw, content_type="application/json", **AUTH)


def assert_still_serving(client) -> None:
    before = ProofJob.objects.count()
    created = post_body(client, json.dumps({"proof_kind": "window-post"}))
    assert created.status_code == 201, created.content
    job_id = created.json()["job_id"]
    assert ProofJob.objects.count() == before + 1
    assert client.get(f"/api/jobs/{job_id}", **AUTH).json()["status"] == JobStatus.QUEUED
    assert client.get("/api/jobs", **AUTH).status_code == 200


def expected_submission_error(body: object) -> bool:
    """Whether the documented rules reject `body` (independent of the server's own checks)."""
    if not isinstance(body, dict) or set(body) - {"proof_kind", "job_id", "priority"}:
        return True
    if not isinstance(body.get("proof_kind"), str) or body["proof_kind"] not in PROOF_KINDS:
        return True
    if "job_id" in body and body["job_id"] is not None:
        if not isinstance(body["job_id"], str) or not DOCUMENTED_ID.fullmatch(body["job_id"]):
            return True
    if "priority" in body and body["priority"] is not None:
        p = body["priority"]
        if isinstance(p, bool) or not isinstance(p, int) or not -1000 <= p <= 1000:
            return True
    return False


def check_submission(client, body: object, raw: str) -> None:
    before = ProofJob.objects.count()
    job_id = body.get("job_id") if isinstance(body, dict) else None
    existing = ProofJob.objects.filter(job_id=job_id).first() if isinstance(job_id, str) and job_id else None
    response = post_body(client, raw)
    assert_answered(response)
    if expected_submission_error(body):
        assert response.status_code == 400, (body, response.content[:300])
        assert ProofJob.objects.count() == before
        return
    if existing is not None and existing.proof_kind != body["proof_kind"]:
        assert response.status_code == 409
        return
    assert response.status_code == (200 if existing else 201), response.content[:300]
    stored = ProofJob.objects.get(job_id=response.json()["job_id"])
    assert stored.proof_kind == body["proof_kind"]
    assert DOCUMENTED_ID.fullmatch(stored.job_id)


@FUZZ
@given(body=json_values)
def test_random_json_body(client, body):
    check_submission(client, body, json.dumps(body))


@FUZZ
@given(raw=st.binary(max_size=200))
def test_random_bytes_body(client, raw):
    before = ProofJob.objects.count()
    response = post_body(client, raw)
    assert_answered(response)
    if response.status_code != 201:
        assert ProofJob.objects.count() == before


@FUZZ
@given(
    kind=st.sampled_from(sorted(PROOF_KINDS)) | odd_text | wrong_for_string,
    job_id=st.from_regex(DOCUMENTED_ID, fullmatch=True) | odd_text | wrong_for_string
    | st.from_regex(r"[A-Za-z0-9]{1,8}[\n\r\t \x00/%?#]", fullmatch=True),
    priority=st.integers(-2000, 2000) | wrong_for_string | st.integers(min_value=10**30),
    present=st.sets(st.sampled_from(["job_id", "priority"])),
    extra=st.dictionaries(odd_text.filter(lambda k: k not in ("proof_kind", "job_id", "priority")), json_scalars,
                          max_size=2),
)
def test_each_field_with_wrong_types(client, kind, job_id, priority, present, extra):
    body: dict = {"proof_kind": kind, **extra}
    if "job_id" in present:
        body["job_id"] = job_id
    if "priority" in present:
        body["priority"] = priority
    check_submission(client, body, json.dumps(body))


@FEW
@given(shape=st.sampled_from(["array", "object", "digits", "string", "neg-digits"]),
       size=st.integers(min_value=1_000, max_value=200_000))
def test_huge_and_deeply_nested_bodies(client, shape, size):
    raw = {
        "array": "[" * size + "]" * size,
        "object": '{"a":' * size + "1" + "}" * size,
        "digits": '{"proof_kind": "porep-c2", "priority": ' + "9" * size + "}",
        "neg-digits": "-" + "1" * size,
        "string": json.dumps({"proof_kind": "x" * size}),
    }[shape]
    before = ProofJob.objects.count()
    response = post_body(client, raw)
    assert_answered(response)
    assert response.status_code in (400, 413)
    assert ProofJob.objects.count() == before


def test_body_over_the_upload_limit_is_413_json(client):
    raw = json.dumps({"proof_kind": "porep-c2", "job_id": "x" * (django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)})
    response = post_body(client, raw)
    assert_answered(response)
    assert response.status_code == 413
    assert ProofJob.objects.count() == 0
    assert_still_serving(client)


@FUZZ
@given(params=st.lists(st.tuples(st.sampled_from(["status", "kind", "page", "page_size", "x", ""]) | odd_text,
                                 odd_text | st.integers().map(str)), max_size=5),
       raw=st.binary(max_size=40))
def test_random_query_strings_on_list(client, params, raw):
    for query in (urlencode(params), quote(raw, safe="=&%+")):
        response = client.get(f"/api/jobs?{query}", **AUTH)
        assert_answered(response)
        assert response.status_code in (200, 400), response.content[:300]
        if response.status_code == 200:
            data = response.json()
            assert isinstance(data["jobs"], list) and 1 <= data["page_size"] <= 500


job_ids = odd_text.filter(bool) | st.from_regex(DOCUMENTED_ID, fullmatch=True) \
    | st.sampled_from(["..", ".", "%", "%00", "%2F", "a%2Fb", "\x00", "a\nb", "x" * 5000, "%E9", "%ZZ"])


@FUZZ
@given(job_id=job_ids, encode=st.booleans())
def test_random_job_ids_in_paths(client, job_id, encode):
    segment = quote(job_id, safe="") if encode else quote(job_id, safe="%/")
    before = ProofJob.objects.count()
    for method, suffix in (("get", ""), ("get", "/proof"), ("post", "/cancel")):
        response = getattr(client, method)(f"/api/jobs/{segment}{suffix}", **AUTH)
        assert_answered(response)
        assert response.status_code in (404, 405), (segment, suffix, response.status_code)
    assert ProofJob.objects.count() == before


@FUZZ
@given(method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE"])
       | st.from_regex(r"[A-Z]{1,12}", fullmatch=True),
       path=st.sampled_from(["/api/jobs", "/api/jobs/nope", "/api/jobs/nope/proof", "/api/jobs/nope/cancel",
                             "/api/status"]),
       body=st.binary(max_size=50))
def test_random_methods(client, method, path, body):
    before = ProofJob.objects.count()
    response = client.generic(method, path, data=body, content_type="application/json", **AUTH)
    if path == "/api/status" and response.status_code == 503:  # documented: no engine in this process
        assert response.json()["error"] == "no engine is running in this process"
        return
    assert_answered(response, json_error=method != "HEAD")  # HEAD answers carry no body
    if not (method == "POST" and path == "/api/jobs"):
        assert ProofJob.objects.count() == before


@FEW
@given(header=odd_text | st.from_regex(r"(?i)bearer [ -~]{0,30}", fullmatch=True))
def test_garbage_credentials_are_401_json(client, header):
    response = client.get("/api/jobs", HTTP_AUTHORIZATION=header)
    assert_answered(response)
    if header.strip() != f"Bearer {TOKEN}":
        assert response.status_code == 401


def test_garbage_ended_with_a_working_api(client):
    for raw in ("[" * 50_000, "9" * 10_000, b"\xff" * 10, '{"proof_kind": "porep-c2", "job_id": "a\\n"}'):
        assert_answered(post_body(client, raw))
    assert ProofJob.objects.count() == 0
    assert_still_serving(client)


@FUZZ
@given(token=odd_text | st.binary(max_size=30).map(lambda b: b.decode("latin-1")), next_url=odd_text)
def test_login_with_garbage_token_is_403(client, token, next_url):
    response = client.get("/login?" + urlencode({"token": token, "next": next_url}))
    assert response.status_code == 403
    assert "Invalid or missing token" in response.content.decode()
    assert "_auth_user_id" not in client.session


@FUZZ
@given(next_url=odd_text | st.sampled_from(["http://[", "//evil.example/", "http://evil.example", "\\\\evil",
                                            "javascript:alert(1)", "/admin/", "%2F%2Fevil"]))
def test_login_with_valid_token_and_garbage_next_stays_on_site(client, next_url):
    response = client.get("/login?" + urlencode({"token": TOKEN, "next": next_url}))
    assert response.status_code == 302
    target = response["Location"]
    assert not re.match(r"^\s*([a-z][a-z0-9+.-]*:|[/\\]{2})", target, re.I), target


@FUZZ
@given(pk=st.integers(min_value=0) | st.integers(min_value=2**63 - 5, max_value=10**40))
def test_admin_bundle_of_missing_job_is_404_json(admin_client, pk):
    response = admin_client.get(f"/admin/gpu_engine/proofjob/{pk}/bundle/")
    assert_answered(response)
    assert response.status_code == 404
    assert response.json()["error"]


def test_admin_bundle_of_job_without_proof_is_404_json(admin_client):
    job = ProofJob.objects.create(job_id="no-proof", proof_kind="window-post")
    response = admin_client.get(f"/admin/gpu_engine/proofjob/{job.pk}/bundle/")
    assert response.status_code == 404 and "has no proof bundle" in response.json()["error"]
