"""Per-source bounds at the door: an answer holding more workers, pipelines or partitions than the
caps allow is `malformed` / `too-large` with the cap named, decided before the adapter runs; a
50,000-worker document (about 6 MB, valid, under the byte cap) beside a healthy source leaves the
healthy one streaming, and the panel page and `/metrics` small."""
from __future__ import annotations

import json
import time

import pytest
from django.contrib.auth import get_user_model

from gpu_engine import wire
from statuspanel.fleet import poller
from statuspanel.fleet.bounds import SourceLimits
from statuspanel.fleet.poller import decode
from statuspanel.fleet.shape import Malformed
from statuspanel.fleet.transport import MAX_BYTES, SourceConfig
from statuspanel.metrics import scrape
from tests.fleet.big_source import StaticServer, five_megabytes
from tests.fleet.conftest import wait_until
from tests.fleet.cuzk_server import CuzkServer, load_fixture

INTERVAL = 0.3


def _refusal(doc, limits: SourceLimits) -> Malformed:
    with pytest.raises(Malformed) as refused:
        decode(json.dumps(doc).encode(), "cuzk", limits=limits)
    assert refused.value.reason == "too-large"
    return refused.value


def test_each_cap_refuses_its_count_before_the_adapter_runs(monkeypatch) -> None:
    adapted = []
    monkeypatch.setattr(poller, "adapt_cuzk", lambda doc: adapted.append(doc))
    doc = load_fixture()  # 2 workers, 2 pipelines of 16 partitions
    assert "5 workers, over the cap of 2 (FLEET_MAX_WORKERS)" in str(
        _refusal({**doc, "gpu_workers": doc["gpu_workers"] * 2 + doc["gpu_workers"][:1]}, SourceLimits(workers=2)))
    assert "2 pipelines, over the cap of 1 (FLEET_MAX_PIPELINES)" in str(_refusal(doc, SourceLimits(pipelines=1)))
    assert "32 partitions, over the cap of 31 (FLEET_MAX_PARTITIONS)" in str(_refusal(doc, SourceLimits(partitions=31)))
    assert "entries in buffers" in str(_refusal({**doc, "buffers": {f"b{i}": 1 for i in range(5)}},
                                                SourceLimits(entries=4)))
    assert adapted == []


def test_a_document_at_the_caps_is_read() -> None:
    snap = decode(json.dumps(load_fixture()).encode(), "cuzk", limits=SourceLimits(workers=2, pipelines=2,
                                                                                   partitions=32))
    assert len(snap["gpu_workers"]) == 2 and sum(len(p["partitions"]) for p in snap["pipelines"]) == 32


def test_the_caps_are_settings(settings) -> None:
    settings.FLEET_MAX_WORKERS, settings.FLEET_MAX_PIPELINES, settings.FLEET_MAX_PARTITIONS = 3, 4, 5
    assert SourceLimits.from_settings() == SourceLimits(workers=3, pipelines=4, partitions=5)


@pytest.mark.django_db
def test_a_50000_worker_source_is_too_large_and_the_healthy_one_keeps_streaming(collect, client) -> None:
    big_doc = five_megabytes()
    size = len(json.dumps(big_doc))
    assert 5_000_000 < size < MAX_BYTES
    with CuzkServer("fixture") as healthy, StaticServer(big_doc) as big:
        collector = collect([
            SourceConfig(id=1, name="healthy", kind="cuzk", transport="http", url=healthy.url, interval_secs=INTERVAL),
            SourceConfig(id=2, name="huge", kind="cuzk", transport="http", url=big.url, interval_secs=INTERVAL),
        ])
        huge = wait_until(lambda: (s := wire.default_cache().get(wire.snapshot_key("huge"))) and
                          s["source"]["state"] == "malformed" and s, 30, "the big source refused")
        assert huge["source"]["reason"] == "too-large"
        assert huge["source"]["error"] == "too large: 50000 workers, over the cap of 512 (FLEET_MAX_WORKERS)"
        assert huge["gpu_workers"] == []  # nothing of it kept
        wait_until(lambda: big.requests >= 3, 30, "the big source polled again")

        seqs, online = [], True
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            snap = wire.default_cache().get(wire.snapshot_key("healthy"))
            online &= snap["source"]["state"] == "online"
            seqs.append(snap["seq"])
            time.sleep(0.2)
        assert online and collector.states["healthy"].failures == 0
        assert len(set(seqs)) >= 8, "the healthy source kept being published beside the big one"

        metrics = scrape()
        assert len(metrics) < 64 * 1024, len(metrics)
        client.force_login(get_user_model().objects.create_user("op", password="pw-for-test-only"))
        page = client.get("/")
        assert page.status_code == 200 and len(page.content) < 1024 * 1024, len(page.content)
        assert b"50000 workers, over the cap" in page.content
