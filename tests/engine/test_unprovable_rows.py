"""A row the engine cannot prove (written into the database around every entry point) fails its job
with the reason; the engine keeps proving the others and never crashes on it."""
from __future__ import annotations

import pytest

from gpu_engine import queue
from gpu_engine.models import JobStatus, ProofJob
from tests.engine.helpers import all_final, running, wait_for


@pytest.mark.django_db(transaction=True)
def test_bad_rows_fail_with_the_reason_and_the_engine_goes_on(make_engine):
    ProofJob.objects.create(job_id="", proof_kind="", priority=999)  # what the old admin form stored
    ProofJob.objects.create(job_id="unknown-kind", proof_kind="no-such-kind", priority=999)
    ProofJob.objects.create(job_id="bad id", proof_kind="winning-post", priority=999)
    ProofJob.objects.create(job_id="loud", proof_kind="winning-post", priority=5000)
    queue.submit_job("window-post", "sound-1")
    engine = make_engine(workers_per_device=1)
    events = []
    engine.add_listener(events.append)
    with running(engine):
        wait_for(lambda: all_final(["", "unknown-kind", "bad id", "loud", "sound-1"]))
        wait_for(lambda: len(events) == 5)
        queue.submit_job("winning-post", "after-the-bad-rows")
        wait_for(lambda: all_final(["after-the-bad-rows"]))
        assert engine.fatal_error is None
    errors = dict(ProofJob.objects.values_list("job_id", "error"))
    statuses = dict(ProofJob.objects.values_list("job_id", "status"))
    assert statuses == {"": "failed", "unknown-kind": "failed", "bad id": "failed", "loud": "failed",
                        "sound-1": "done", "after-the-bad-rows": "done"}
    assert errors[""].startswith("cannot be proved: proof_kind must not be empty; valid kinds: porep-c2")
    assert errors["unknown-kind"].startswith("cannot be proved: unknown proof kind 'no-such-kind'")
    assert errors["bad id"].startswith("cannot be proved: job_id may contain only letters")
    assert errors["loud"] == "cannot be proved: priority must be between -1000 and 1000, got 5000"
    assert ProofJob.objects.filter(status=JobStatus.FAILED, finished_at__isnull=True).count() == 0
    assert sorted(e.job_id for e in events if not e.success) == ["", "bad id", "loud", "unknown-kind"]
