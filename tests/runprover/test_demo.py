"""`--demo` keeps a mixed queue of jobs whose ids are shaped like Curio's task ids."""
from __future__ import annotations

import re

import pytest

from gpu_engine import queue
from gpu_engine.console.demo import DemoFeeder
from gpu_engine.models import ProofJob

SHAPES = {
    "snap-update": r"ps-snap-\d+-\d+-\d+",
    "porep-c2": r"ps-porep-\d+-\d+-\d+",
    "window-post": r"wdpost-\d+-\d+-\d+",
    "winning-post": r"winpost-\d+-\d+-\d+",
}


@pytest.mark.django_db
def test_demo_tops_queue_up_with_curio_shaped_ids():
    feeder = DemoFeeder(depth=40, seed=7)
    assert feeder.top_up() == 40
    assert queue.queue_depth() == 40
    jobs = list(ProofJob.objects.all())
    assert {j.proof_kind for j in jobs} == set(SHAPES)
    for job in jobs:
        assert re.fullmatch(SHAPES[job.proof_kind], job.job_id), job.job_id
    assert feeder.top_up() == 0  # already at depth
    queue.claim_next("demo-engine")
    assert feeder.top_up() == 1
