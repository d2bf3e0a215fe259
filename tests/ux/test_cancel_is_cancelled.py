"""A job cancelled while the engine proves it reaches the console's listeners as "cancelled" (the
API's word), and the engine's own counts keep it out of the failures."""
from __future__ import annotations

import pytest

from gpu_engine import queue
from gpu_engine.models import PartitionRun
from tests.engine.conftest import make_engine  # noqa: F401 - the engine tests' fixture
from tests.engine.helpers import running, wait_for


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_cancelled_mid_proof_is_announced_as_cancelled(make_engine):  # noqa: F811
    queue.submit_job("snap-update", "cancel-words")
    engine = make_engine(finalize_delay_secs=0.05)
    events = []
    engine.add_listener(events.append)
    with running(engine):
        wait_for(lambda: PartitionRun.objects.filter(job__job_id="cancel-words", state="done").count() >= 1)
        queue.cancel_job("cancel-words")
        wait_for(lambda: any(e.job_id == "cancel-words" for e in events), timeout=30)
    event = next(e for e in events if e.job_id == "cancel-words")
    assert (event.success, event.outcome) == (False, "cancelled")
    assert engine.stats.cancelled_by_kind["snap-update"] == 1 and not engine.stats.failed_by_kind
