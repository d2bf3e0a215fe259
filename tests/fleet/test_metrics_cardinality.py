"""`/metrics` stays bounded whatever a fleet source says: a real 3,000-worker source whose workers
claim made-up states and proof kinds adds at most METRICS_MAX_SERIES_PER_ENGINE per-worker series
plus the fixed families; its states and kinds are folded into the known words (`other`), and the
series left out are counted in `vastmanager_metrics_series_dropped`."""
from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpu_engine import wire
from gpu_engine.vocabulary import WORKER_STATES
from statuspanel.fleet.bounds import SourceLimits
from statuspanel.fleet.transport import SourceConfig
from statuspanel.metrics import OTHER, scrape
from tests.fleet.big_source import StaticServer, many_workers
from tests.fleet.conftest import wait_until

WORKERS = 3000
MAX_SERIES = 1000


def _series_of(engine: str, text: str) -> list[tuple[str, dict[str, str], float]]:
    return [(sample.name, sample.labels, sample.value)
            for family in text_string_to_metric_families(text) for sample in family.samples
            if sample.labels.get("engine") == engine]


@pytest.mark.django_db
def test_a_3000_worker_source_adds_a_bounded_number_of_series(collect, settings) -> None:
    settings.METRICS_MAX_SERIES_PER_ENGINE = MAX_SERIES
    doc = many_workers(WORKERS, kinds=WORKERS)  # every other worker in a state and kind of its own
    for i, pipe in enumerate(doc["pipelines"]):
        pipe["proof_kind"] = f"made-up-kind-{i}"
    with StaticServer(doc) as server:
        collect([SourceConfig(id=1, name="wide", kind="cuzk", transport="http", url=server.url, interval_secs=0.5)],
                limits=SourceLimits(workers=WORKERS))
        wait_until(lambda: (s := wire.default_cache().get(wire.snapshot_key("wide"))) and
                   len(s["gpu_workers"]) == WORKERS, 30, "the wide source online")
        text = scrape().decode()

    series = _series_of("wide", text)
    per_worker = [s for s in series if "worker" in s[1]]
    print(f"series of a {WORKERS}-worker source: {len(series)} ({len(per_worker)} per-worker)")
    assert len(per_worker) <= MAX_SERIES
    assert len(series) <= MAX_SERIES + 100
    states = {labels["state"] for name, labels, _ in series if "state" in labels}
    assert states == set(WORKER_STATES) | {OTHER}
    kinds = {labels["kind"] for name, labels, _ in series if "kind" in labels}
    assert kinds == {OTHER}
    dropped = [value for name, _, value in series if name == "vastmanager_metrics_series_dropped"]
    workers_shown = len({labels["worker"] for _, labels, _ in per_worker})
    assert dropped and dropped[0] > 0
    assert workers_shown < WORKERS and dropped[0] >= (WORKERS - workers_shown) * (len(WORKER_STATES) + 1)
    by_state = {labels["state"]: value for name, labels, value in series if name == "vastmanager_workers"}
    assert sum(by_state.values()) == WORKERS  # the counts by state still count every worker
