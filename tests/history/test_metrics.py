"""`/metrics` read with prometheus_client's own parser: values agree with the snapshot and the
database after a known batch, it is refused without a token, and removed workers leave no series."""
from __future__ import annotations

import pytest
from django.db.models import Count, Sum
from prometheus_client.parser import text_string_to_metric_families

from gpu_engine import backends, queue
from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.models import PartitionRun, ProofJob
from tests.credentials import AUTH
from tests.engine.helpers import all_final, running, wait_for
from tests.panel.helpers import busy_tracker

ENGINE = "test-engine"


def scrape(client, **headers) -> dict[str, list]:
    """name -> [(labels, value)] of every sample of one scrape."""
    response = client.get("/metrics", **(headers or AUTH))
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def value(samples: dict[str, list], name: str, **labels) -> float:
    found = [v for lab, v in samples.get(name, []) if all(lab.get(k) == w for k, w in labels.items())]
    assert len(found) == 1, (name, labels, samples.get(name))
    return found[0]


class FailOnce(CpuBackend):
    """The real CPU backend whose first device call fails (a job with one attempt then fails)."""

    remaining = 1

    def compute_h(self, a, b, c):
        if FailOnce.remaining > 0:
            FailOnce.remaining -= 1
            raise RuntimeError("injected fault")
        return super().compute_h(a, b, c)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_metrics_agree_with_snapshot_and_database(make_engine, publish, client, api_token, monkeypatch):
    FailOnce.remaining = 1
    monkeypatch.setattr(backends, "create_backend", lambda name, gpu_ordinal=0: FailOnce())
    jobs = [queue.submit_job("porep-c2", f"m-porep-{i}")[0].job_id for i in range(6)]
    queue.submit_job("window-post", "m-cancelled")
    queue.cancel_job("m-cancelled")
    engine = make_engine(workers_per_device=2, partition_attempts=1)
    with running(engine):
        wait_for(lambda: all_final(jobs), timeout=180)
        engine.history.flush(10)
        snap = publish(engine.tracker.snapshot(), ENGINE)
        m = scrape(client)
    assert ProofJob.objects.filter(status="done").count() == 5
    assert ProofJob.objects.filter(status="failed").count() == 1
    assert value(m, "vastmanager_jobs_completed_total", engine=ENGINE, kind="porep-c2") == 5
    assert value(m, "vastmanager_jobs_failed_total", engine=ENGINE, kind="porep-c2") == 1
    assert value(m, "vastmanager_jobs_cancelled_total", engine="", kind="window-post") == 1
    # The histograms are the stored partition runs' phases, by kind.
    done = PartitionRun.objects.filter(engine_id=ENGINE, state="done", proof_kind="porep-c2")
    agg = done.aggregate(n=Count("id"), gpu=Sum("gpu_ms"), synth=Sum("synth_ms"), fin=Sum("finalize_ms"))
    for phase, key in (("gpu", "gpu"), ("synthesis", "synth"), ("finalize", "fin")):
        labels = dict(engine=ENGINE, kind="porep-c2", phase=phase)
        assert value(m, "vastmanager_phase_duration_seconds_count", **labels) == agg["n"]
        assert value(m, "vastmanager_phase_duration_seconds_sum", **labels) == pytest.approx(agg[key] / 1000)
        assert value(m, "vastmanager_phase_duration_seconds_bucket", le="+Inf", **labels) == agg["n"]
    assert value(m, "vastmanager_phase_duration_seconds_count", engine=ENGINE, kind="porep-c2", phase="job") == 5
    # Live series: the snapshot's own numbers.
    for state in ("idle", "proving", "error"):
        want = sum(1 for w in snap["gpu_workers"] if w["state"] == state)
        assert value(m, "vastmanager_workers", engine=ENGINE, state=state) == want
    assert value(m, "vastmanager_queue_depth", engine=ENGINE) == snap["counters"]["queue_depth"]
    assert value(m, "vastmanager_memory_budget_total_bytes", engine=ENGINE) == snap["memory"]["total_bytes"]
    assert value(m, "vastmanager_memory_budget_used_bytes", engine=ENGINE) == snap["memory"]["used_bytes"]
    assert value(m, "vastmanager_engine_up", engine=ENGINE) == 1
    assert 0 <= value(m, "vastmanager_publisher_heartbeat_age_seconds", engine=ENGINE) < 30
    done_parts = sum(1 for p in snap["pipelines"] for x in p["partitions"] if x["state"] == "done")
    assert sum(v for lab, v in m["vastmanager_partitions"] if lab["phase"] == "done") == done_parts


@pytest.mark.django_db
def test_refused_without_a_valid_token(client, api_token, settings):
    for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer wrong"}, {"HTTP_AUTHORIZATION": "Basic x"}):
        response = client.get("/metrics", **headers)
        assert response.status_code == 401 and "error" in response.json()
    assert client.get("/metrics", **AUTH).status_code == 200
    settings.VASTMANAGER_STATUS_TOKEN = "read-only-status-token"
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer read-only-status-token").status_code == 200
    settings.METRICS_PUBLIC = True
    assert client.get("/metrics").status_code == 200


@pytest.mark.django_db
def test_no_series_left_for_a_removed_worker_or_engine(client, api_token, publish):
    tracker = busy_tracker()
    publish(tracker.snapshot(), "metrics-a")
    m = scrape(client)
    assert {lab["worker"] for lab, _ in m["vastmanager_worker_state"]} == {"0", "1"}
    assert value(m, "vastmanager_worker_state", engine="metrics-a", worker="0", state="proving") == 1
    assert value(m, "vastmanager_partitions", engine="metrics-a", kind="snap-update", phase="failed") == 1

    snap = tracker.snapshot()
    snap["gpu_workers"] = [w for w in snap["gpu_workers"] if w["worker_id"] != 1]  # worker 1 is gone
    snap["source"] = {"kind": "cuzk", "transport": "http", "state": "online", "error": None,
                      "last_ok_secs_ago": 1.5, "poll_ms": 12.0}
    publish(snap, "metrics-a")
    m = scrape(client)
    assert {lab["worker"] for lab, _ in m["vastmanager_worker_state"]} == {"0"}
    assert not [lab for lab, _ in m["vastmanager_worker_busy_seconds"] if lab["worker"] == "1"]
    assert value(m, "vastmanager_source_up", engine="metrics-a", source_kind="cuzk") == 1
    assert value(m, "vastmanager_source_poll_latency_seconds", engine="metrics-a") == pytest.approx(0.012)

    from django.core.cache import cache

    from gpu_engine import wire

    cache.delete(wire.snapshot_key("metrics-a"))  # the engine's heartbeat expired
    m = scrape(client)
    assert not any(lab.get("engine") == "metrics-a" for samples in m.values() for lab, _ in samples)
