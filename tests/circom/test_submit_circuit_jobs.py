"""Submitting circuit jobs: inputs checked against the circuit's signals at the door (a 400 naming the
signal), witnesses checked as files, size limits as settings, batches as multipart files; each
item is one partition stored with the job."""
from __future__ import annotations

import base64
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from gpu_engine.circom.jobs import item_path
from gpu_engine.models import CircuitJob, ProofJob
from tests.circom import tools
from tests.circom.registered import b64, post_job, register
from tests.credentials import AUTH

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _circuits_dir(settings, tmp_path, api_token):
    settings.CIRCUITS_DIR = tmp_path / "circuits"


@pytest.fixture
def mult(multiplier_circuit):
    return register(multiplier_circuit, "mult")


@pytest.fixture
def wsum(multi_public_circuit):
    return register(multi_public_circuit, "wsum")


def _error(response, code: int) -> str:
    assert response.status_code == code, response.content
    return response.json()["error"]


@pytest.mark.parametrize("item, needle", [
    ({"a": "3"}, "missing input signal 'b'"),
    ({"a": "3", "b": "4", "c": "5"}, "unknown input signal 'c'"),
    ({"a": "three", "b": "4"}, "input signal 'a': 'three' is not a number"),
    ({"a": 1.5, "b": "4"}, "input signal 'a': float is not an integer"),
    ({"a": ["1", "2"], "b": "4"}, "input signal 'a' takes 1 value(s), got 2"),
    ("a=3", "a circuit input is a JSON object"),
])
def test_bad_inputs_are_400_naming_the_signal(client, mult, item, needle):
    error = _error(post_job(client, {"proof_kind": "mult", "inputs": [{"a": "1", "b": "2"}, item]}), 400)
    assert error.startswith("inputs[1]: ") and needle in error
    assert not ProofJob.objects.exists()


def test_array_signals_are_checked_by_size(client, wsum, multi_public_circuit):
    good = multi_public_circuit.sample_input()
    assert post_job(client, {"proof_kind": "wsum", "inputs": [good]}).status_code == 201
    short = dict(good, x=good["x"][:2])
    assert "input signal 'x' takes 3 value(s), got 2" in _error(post_job(client, {"proof_kind": "wsum",
                                                                                "inputs": [short]}), 400)


def test_witnesses_are_checked_as_files(client, mult, multiplier_circuit, multi_public_circuit, tmp_path):
    other = tools.wtns_calculate(multi_public_circuit, multi_public_circuit.sample_input(), tmp_path / "o.wtns")
    error = _error(post_job(client, {"proof_kind": "mult", "witnesses": [b64(other)]}), 400)
    assert error.startswith("witnesses[0]: wtns section 1 (header):") and "the circuit has" in error
    assert "not valid base64" in _error(post_job(client, {"proof_kind": "mult", "witnesses": ["@@"]}), 400)
    junk = base64.b64encode(b"wtns" + bytes(30)).decode()
    assert "witnesses[0]: wtns" in _error(post_job(client, {"proof_kind": "mult", "witnesses": [junk]}), 400)
    assert "base64 string" in _error(post_job(client, {"proof_kind": "mult", "witnesses": [7]}), 400)


@pytest.mark.parametrize("body, needle", [
    ({"proof_kind": "mult"}, "send either witnesses"),
    ({"proof_kind": "mult", "inputs": [], "witnesses": []}, "send either witnesses"),
    ({"proof_kind": "mult", "inputs": []}, "non-empty list"),
    ({"proof_kind": "mult", "inputs": {"a": "1"}}, "non-empty list"),
    ({"proof_kind": "mult", "inputs": [{"a": "1", "b": "2"}], "extra": 1}, "unknown field(s): extra"),
    ({"proof_kind": "porep-c2", "inputs": [{"a": "1"}]}, "unknown field(s): inputs"),
    ({"proof_kind": "nope", "inputs": [{}]}, "unknown proof kind 'nope'"),
])
def test_malformed_circuit_bodies(client, mult, body, needle):
    assert needle in _error(post_job(client, body), 400)


def test_unknown_kind_lists_circuits(client, mult):
    error = _error(post_job(client, {"proof_kind": "nope"}), 400)
    assert "unknown proof kind 'nope'" in error
    listed = client.get("/api/jobs?kind=nope", **AUTH).json()["error"]
    assert "registered circuits: mult" in listed
    assert client.get("/api/jobs?kind=mult", **AUTH).status_code == 200


def test_inputs_need_the_wasm(client, multiplier_circuit):
    register(multiplier_circuit, "bare", wasm=False)
    assert "registered without its .wasm" in _error(post_job(client, {"proof_kind": "bare",
                                                                     "inputs": [{"a": "1", "b": "2"}]}), 400)


def test_limits_are_settings(client, mult, settings):
    settings.CIRCUIT_MAX_BATCH = 3
    error = _error(post_job(client, {"proof_kind": "mult", "inputs": [{"a": "1", "b": "2"}] * 4}), 413)
    assert "CIRCUIT_MAX_BATCH" in error
    settings.CIRCUIT_MAX_BODY = 200
    body = {"proof_kind": "mult", "inputs": [{"a": "1" * 60, "b": "2"}] * 3}
    assert "CIRCUIT_MAX_BODY" in _error(post_job(client, body), 413)
    assert not ProofJob.objects.exists()


def test_a_body_past_djangos_form_limit_is_fine_for_circuits(client, mult, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = settings.MAX_REQUEST_BYTES = 1000
    items = [{"a": str(i), "b": "2"} for i in range(100)]
    response = post_job(client, {"proof_kind": "mult", "inputs": items})
    assert response.status_code == 201, response.content
    assert response.json()["total_partitions"] == 100
    assert _error(post_job(client, {"proof_kind": "porep-c2", "job_id": "x" * 2000}), 413)


def test_items_are_stored_with_the_job_and_resubmission_is_idempotent(client, mult, multiplier_circuit, tmp_path):
    inputs = [{"a": "3", "b": "11"}, {"a": "0x10", "b": "-1"}]
    r = post_job(client, {"proof_kind": "mult", "job_id": "j1", "inputs": inputs, "priority": 5})
    assert r.status_code == 201
    job = ProofJob.objects.get(job_id="j1")
    assert (job.proof_kind, job.total_partitions, job.priority, job.status) == ("mult", 2, 5, "queued")
    cj = CircuitJob.objects.get(job=job)
    assert [json.loads(item_path(cj, i).read_text()) for i in range(2)] == inputs
    again = post_job(client, {"proof_kind": "mult", "job_id": "j1", "inputs": inputs})
    assert again.status_code == 200 and CircuitJob.objects.count() == 1
    conflict = post_job(client, {"proof_kind": "porep-c2", "job_id": "j1"})
    assert conflict.status_code == 409


def test_multipart_batches(client, mult, multiplier_circuit, tmp_path):
    listing = json.dumps([{"a": str(i), "b": "7"} for i in range(5)]).encode()
    r = client.post("/api/jobs", {"proof_kind": "mult", "job_id": "mp-list",
                                  "inputs": SimpleUploadedFile("batch.json", listing)}, **AUTH)
    assert r.status_code == 201, r.content
    assert r.json()["total_partitions"] == 5
    lines = b"\n".join(json.dumps({"a": str(i), "b": "7"}).encode() for i in range(3)) + b"\n"
    r = client.post("/api/jobs", {"proof_kind": "mult", "inputs": SimpleUploadedFile("b.jsonl", lines)}, **AUTH)
    assert r.status_code == 201 and r.json()["total_partitions"] == 3
    wtns = [tools.wtns_calculate(multiplier_circuit, {"a": str(i), "b": "2"}, tmp_path / f"{i}.wtns") for i in range(2)]
    files = [SimpleUploadedFile(p.name, p.read_bytes()) for p in wtns]
    r = client.post("/api/jobs", {"proof_kind": "mult", "job_id": "mp-w", "witness": files}, **AUTH)
    assert r.status_code == 201, r.content
    cj = CircuitJob.objects.get(job__job_id="mp-w")
    assert cj.source == "witnesses" and item_path(cj, 1).read_bytes() == wtns[1].read_bytes()
    bad = client.post("/api/jobs", {"proof_kind": "mult", "inputs": SimpleUploadedFile(
        "b.json", b'[{"a": "1"}]')}, **AUTH)
    assert "inputs[0]: missing input signal 'b'" in _error(bad, 400)
    garbled = client.post("/api/jobs", {"proof_kind": "mult", "inputs": SimpleUploadedFile("b.json", b"{nope\n")},
                          **AUTH)
    assert "inputs line 1: malformed JSON" in _error(garbled, 400)
    builtin = client.post("/api/jobs", {"proof_kind": "porep-c2", "inputs": SimpleUploadedFile("b.json", listing)},
                          **AUTH)
    assert "only registered circuits" in _error(builtin, 400)
    extra = client.post("/api/jobs", {"proof_kind": "mult", "foo": "1",
                                      "inputs": SimpleUploadedFile("b.json", listing)}, **AUTH)
    assert "unknown form field(s): foo" in _error(extra, 400)


def test_proof_formats(client, mult):
    post_job(client, {"proof_kind": "mult", "job_id": "pending", "inputs": [{"a": "1", "b": "2"}]})
    assert client.get("/api/jobs/pending/proof?format=snarkjs", **AUTH).status_code == 409
    assert "unknown format" in _error(client.get("/api/jobs/pending/proof?format=xml", **AUTH), 400)
    post_job(client, {"proof_kind": "porep-c2", "job_id": "builtin"})
    assert "for circuit jobs" in _error(client.get("/api/jobs/builtin/proof?format=snarkjs", **AUTH), 400)


def test_a_multipart_batch_may_hold_more_files_than_djangos_default(client, mult, multiplier_circuit, tmp_path):
    wtns = tools.wtns_calculate(multiplier_circuit, {"a": "5", "b": "6"}, tmp_path / "w.wtns").read_bytes()
    files = [SimpleUploadedFile(f"{i}.wtns", wtns) for i in range(120)]
    r = client.post("/api/jobs", {"proof_kind": "mult", "witness": files}, **AUTH)
    assert r.status_code == 201, r.content
    assert r.json()["total_partitions"] == 120


def test_deleting_a_job_removes_its_items(client, mult):
    post_job(client, {"proof_kind": "mult", "job_id": "gone", "inputs": [{"a": "1", "b": "2"}]})
    path = item_path(CircuitJob.objects.get(job__job_id="gone"), 0)
    assert path.exists()
    ProofJob.objects.filter(job_id="gone").delete()
    assert not path.exists() and not path.parent.exists()
