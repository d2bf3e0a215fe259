"""Inputs at the door: deep nesting is a 400 naming the problem (one iterative walk, the engine's
too), and a circuit registered without its .sym has its inputs checked by asking the wasm (an unknown
signal or a wrong size named in the 400, missing values counted) and proves what it accepts."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from gpu_engine.circom.inputs import MAX_DEPTH, flatten_inputs
from gpu_engine.groth16.field import R
from gpu_engine.models import ProofJob
from tests.circom.registered import make_engine, post_job, register
from tests.credentials import AUTH
from tests.engine.helpers import all_final, running, wait_for

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _circuits_dir(settings, tmp_path, api_token):
    settings.CIRCUITS_DIR = tmp_path / "circuits"


def _nested(depth: int, leaf="1"):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _error(response, code: int = 400) -> str:
    assert response.status_code == code, response.content
    return response.json()["error"]


@pytest.fixture
def nosym(multiplier_circuit, tmp_path):
    lone = tmp_path / "lone_js"
    lone.mkdir()
    (lone / "lone.wasm").write_bytes(multiplier_circuit.wasm.read_bytes())
    call_command("addcircuit", "nosym", "--zkey", str(multiplier_circuit.zkey), "--wasm", str(lone / "lone.wasm"))


@pytest.mark.parametrize("depth", [100, 954])
@pytest.mark.parametrize("opening, closing", [("[", "]"), ('{"k":', "}")])
def test_deeply_nested_inputs_are_a_400_naming_the_problem(client, multiplier_circuit, opening, closing, depth):
    """Never a 500 from a RecursionError: refused by the depth limit (or, deeper than the JSON reader
    goes under this test's stack, as malformed JSON), and nothing stored."""
    register(multiplier_circuit, "mult")
    deep = opening * depth + '"1"' + closing * depth  # written by hand: json.dumps itself recurses
    body = '{"proof_kind": "mult", "inputs": [{"a": ' + deep + ', "b": "2"}]}'
    error = _error(client.post("/api/jobs", body, content_type="application/json", **AUTH))
    if depth == 100 or "malformed JSON" not in error:
        assert f"nested more than {MAX_DEPTH} levels deep" in error and "'a" in error
    assert not ProofJob.objects.exists()


def test_the_engine_walks_inputs_with_the_same_limit():
    assert flatten_inputs({"a": _nested(MAX_DEPTH - 1)}, R) == {"a": [1]}  # the object is a level too
    with pytest.raises(ValueError, match=f"nested more than {MAX_DEPTH} levels"):
        flatten_inputs({"a": _nested(MAX_DEPTH)}, R)
    with pytest.raises(ValueError, match="nested more than"):
        flatten_inputs({"a": _nested(100_000)}, R)  # no RecursionError however deep


def test_without_the_sym_the_wasm_names_unknown_and_wrong_sized_signals(client, nosym):
    error = _error(post_job(client, {"proof_kind": "nosym", "inputs": [{"a": "3", "b": "4"}, {"a": "3", "c": "4"}]}))
    assert error.startswith("inputs[1]: unknown input signal 'c'")
    error = _error(post_job(client, {"proof_kind": "nosym", "inputs": [{"a": ["3", "5"], "b": "4"}]}))
    assert "inputs[0]: input signal 'a' takes 1 value(s), got 2" in error
    error = _error(post_job(client, {"proof_kind": "nosym", "inputs": [{"a": "3"}]}))
    assert "inputs[0]: missing input signals: the circuit takes 2 input values, these signals give 1" in error
    assert not ProofJob.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_without_the_sym_accepted_inputs_are_proved(client, params_dir, nosym):
    r = post_job(client, {"proof_kind": "nosym", "job_id": "nosym-1", "inputs": [{"a": "3", "b": "11"}]})
    assert r.status_code == 201, r.content
    with running(make_engine(params_dir)) as engine:
        wait_for(lambda: all_final(["nosym-1"]), timeout=120)
        engine.history.flush(10)
    job = ProofJob.objects.get(job_id="nosym-1")
    assert job.status == "done" and job.verified, job.error
