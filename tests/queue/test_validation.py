"""One rule set for a job (gpu_engine/validation.py): the API, the queue and the commands give the
same refusals, and `row_problem` names what a stored row breaks."""
from __future__ import annotations

import pytest

from gpu_engine import queue, validation
from gpu_engine.kinds import PROOF_KINDS


@pytest.mark.parametrize("kind,message", [
    ("", "proof_kind must not be empty; valid kinds: " + ", ".join(PROOF_KINDS)),
    ("nope", "unknown proof kind 'nope'; valid kinds: " + ", ".join(PROOF_KINDS)),
    (3, "proof_kind must be a string; valid kinds: " + ", ".join(PROOF_KINDS)),
])
def test_kind_messages(kind, message):
    with pytest.raises(validation.JobError, match="^" + message.replace("(", r"\(") + "$"):
        validation.validate_kind(kind)


def test_circuits_flag_accepts_registered_circuit_names(monkeypatch):
    monkeypatch.setattr(validation, "registered_circuit_names", lambda: ["my-circuit"])
    assert validation.validate_kind("my-circuit", circuits=True) == "my-circuit"
    with pytest.raises(validation.JobError, match="valid kinds: .*winning-post$"):
        validation.validate_kind("my-circuit")


@pytest.mark.django_db  # row_problem also accepts registered circuits: it reads their names
@pytest.mark.parametrize("row,problem", [
    (("porep-c2", "ok-1", 0), None),
    (("", "ok-1", 0), "proof_kind must not be empty"),
    (("porep-c2", "", 0), "job_id must not be empty"),
    (("porep-c2", "ok\n", 0), "job_id may contain only"),
    (("porep-c2", "ok-1", 1001), "priority must be between -1000 and 1000, got 1001"),
])
def test_row_problem_names_the_first_broken_rule(row, problem):
    found = validation.row_problem(*row)
    assert found == problem if problem is None else found.startswith(problem)


def test_queue_uses_the_same_rules():
    assert queue.validate_kind is validation.validate_kind
    assert queue.JobError is validation.JobError


@pytest.mark.django_db
def test_submit_refuses_with_the_rule_sets_message():
    with pytest.raises(validation.JobError) as caught:
        queue.submit_job("porep-c2", "x" * 129)
    assert str(caught.value) == "job_id is 129 characters long; the limit is 128"
