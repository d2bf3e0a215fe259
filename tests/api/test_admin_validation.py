"""The admin applies the job rules of gpu_engine/validation.py: a job added or changed there is refused
with the same message the API gives, and requeue never puts back a row that breaks them."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from gpu_engine import validation
from gpu_engine.models import JobStatus, ProofJob

ADD = "/admin/gpu_engine/proofjob/add/"
CHANGELIST = "/admin/gpu_engine/proofjob/"
NO_RUNS = {"partition_runs-TOTAL_FORMS": "0", "partition_runs-INITIAL_FORMS": "0"}  # the runs inline's management form


@pytest.fixture
def admin_client(client, db):
    client.force_login(get_user_model().objects.create_superuser("root", "r@example.invalid", "pw-test-only"))
    return client


def api_message(**fields) -> str:
    """What the rule set says about these fields (the API answers with the same text)."""
    checks = {"proof_kind": validation.validate_kind, "job_id": validation.validate_job_id,
              "priority": validation.validate_priority}
    for name, value in fields.items():
        with pytest.raises(validation.JobError) as caught:
            checks[name](value)
        return str(caught.value)
    raise AssertionError("no field given")


@pytest.mark.parametrize("form,field,bad", [
    ({"job_id": "", "proof_kind": "porep-c2", "priority": "0"}, "job_id", ""),
    ({"job_id": "ok-1", "proof_kind": "", "priority": "0"}, "proof_kind", ""),
    ({"job_id": "ok-2", "proof_kind": "porep-c2", "priority": "5000"}, "priority", 5000),
    ({"job_id": "bad id/x", "proof_kind": "porep-c2", "priority": "0"}, "job_id", "bad id/x"),
    ({"job_id": "ok-3", "proof_kind": "no-such-kind", "priority": "0"}, "proof_kind", "no-such-kind"),
])
def test_admin_add_refuses_with_the_rule_sets_message(admin_client, form, field, bad):
    response = admin_client.post(ADD, form)
    assert response.status_code == 200  # the form again, not a redirect to the saved job
    body = response.content.decode()
    message = api_message(**{field: bad})
    from django.utils.html import escape

    assert escape(message) in body
    assert not ProofJob.objects.exists()


def test_admin_add_of_an_empty_form_stores_nothing(admin_client):
    response = admin_client.post(ADD, {"job_id": "", "proof_kind": "", "priority": "0"})
    assert response.status_code == 200
    assert not ProofJob.objects.exists()


def test_admin_add_of_a_sound_job_queues_it_like_the_api(admin_client):
    response = admin_client.post(ADD, {"job_id": "from-admin-1", "proof_kind": "snap-update", "priority": "7"})
    assert response.status_code == 302
    job = ProofJob.objects.get(job_id="from-admin-1")
    assert (job.proof_kind, job.priority, job.status, job.total_partitions) == ("snap-update", 7, "queued", 16)


def test_admin_change_refuses_a_priority_out_of_range(admin_client):
    job = ProofJob.objects.create(job_id="prio-1", proof_kind="window-post")
    response = admin_client.post(f"{CHANGELIST}{job.pk}/change/", {"priority": "-1001", **NO_RUNS})
    assert response.status_code == 200
    assert "priority must be between -1000 and 1000, got -1001" in response.content.decode()
    job.refresh_from_db()
    assert job.priority == 0


def test_requeue_refuses_a_row_that_breaks_the_rules(admin_client):
    bad = ProofJob.objects.create(job_id="", proof_kind="", status=JobStatus.FAILED, error="cannot be proved")
    good = ProofJob.objects.create(job_id="good-1", proof_kind="porep-c2", status=JobStatus.FAILED, attempts=3)
    response = admin_client.post(CHANGELIST, {"action": "requeue_failed", "_selected_action": [bad.pk, good.pk]},
                                 follow=True)
    body = response.content.decode()
    assert "Requeued 1 failed job(s)." in body
    assert "Not requeued: job &#x27;&#x27; cannot be proved: proof_kind must not be empty" in body
    bad.refresh_from_db()
    good.refresh_from_db()
    assert (bad.status, good.status, good.attempts) == ("failed", "queued", 0)


def test_admin_change_of_the_priority_keeps_id_and_kind(admin_client):
    job = ProofJob.objects.create(job_id="prio-2", proof_kind="window-post", total_partitions=1)
    response = admin_client.post(f"{CHANGELIST}{job.pk}/change/", {"priority": "42", **NO_RUNS})
    assert response.status_code == 302, response.content.decode()[:2000]
    job.refresh_from_db()
    assert (job.job_id, job.proof_kind, job.priority) == ("prio-2", "window-post", 42)
