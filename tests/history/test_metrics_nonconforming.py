"""A cached document that lacks keys the snapshot's types require (written by something other than a
publisher or the fleet collector) is skipped and counted by `/metrics`: the other engines' series are
scraped as before, never a failed scrape."""
from __future__ import annotations

import pytest

from gpu_engine import schema
from tests.history.test_metrics import scrape, value
from tests.panel.helpers import busy_tracker


def test_conforms_names_what_the_types_require():
    snap = busy_tracker().snapshot()
    assert schema.conforms(snap)
    for broken in ({k: v for k, v in snap.items() if k != "synthesis"},
                   dict(snap, memory={"total_bytes": 1}),
                   dict(snap, pipelines=[{"job_id": "x"}]),
                   dict(snap, gpu_workers="nope"), [], None):
        assert not schema.conforms(broken)


@pytest.mark.django_db
def test_a_partial_document_is_skipped_and_counted_while_the_others_are_scraped(client, api_token, publish):
    publish(busy_tracker().snapshot(), "whole-engine")
    partial = {k: v for k, v in busy_tracker().snapshot().items() if k not in ("synthesis", "memory")}
    publish(partial, "partial-engine")
    m = scrape(client)
    assert value(m, "vastmanager_snapshot_nonconforming", engine="partial-engine") == 1
    assert value(m, "vastmanager_engine_up", engine="partial-engine") == 1
    assert not [lab for lab, _ in m["vastmanager_queue_depth"] if lab["engine"] == "partial-engine"]
    assert value(m, "vastmanager_worker_state", engine="whole-engine", worker="0", state="proving") == 1
