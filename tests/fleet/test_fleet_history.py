"""History of a fleet engine from real polls of a scripted cuzk (tests/fleet/scripted_cuzk.py): proofs
per minute and busy share over ten observed minutes match what the daemon did, its restart counted
once and never negative; its /history page renders; /metrics carries its counters, promtool-clean."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from statuspanel.fleet import cost
from statuspanel.history.fleet import build_fleet_timeline, fleet_latency, fleet_throughput
from statuspanel.models import FleetMinute
from tests.fleet import scripted_cuzk as script

pytestmark = pytest.mark.django_db(transaction=True)  # the collector writes from its own threads
NAME = "rented-box"


@pytest.fixture
def observed(clean_panel_cache) -> float:
    t0 = script.run_scenario(NAME)
    cost.clear_cache()
    yield t0
    cost.clear_cache()


def test_proofs_per_minute_and_busy_share_match_what_the_daemon_did(observed) -> None:
    want = script.expected()
    engine = FleetMinute.objects.filter(source_name=NAME, lane="")
    assert sum(sum(r.completed.values()) for r in engine) == want.completed == 60
    assert sum(sum(r.failed.values()) for r in engine) == want.failed
    assert sum(r.restarts for r in engine) == 1
    assert all(n > 0 for r in engine for n in r.completed.values())  # the restart gave no negative delta
    gpu = FleetMinute.objects.filter(source_name=NAME, lane="gpu0")
    observed_secs = sum(r.observed_secs for r in gpu)
    assert observed_secs == pytest.approx(want.observed_secs)
    assert sum(r.busy_secs for r in gpu) / observed_secs == pytest.approx(want.busy_share)
    idle_worker = FleetMinute.objects.filter(source_name=NAME, lane="w1")
    assert sum(r.busy_secs for r in idle_worker) == 0
    # per minute: the throughput chart's bars add up to it, ten minutes of PROOFS_PER_POLL * 2 per minute
    chart = fleet_throughput(NAME, minutes=60)
    assert chart["total"] == want.completed
    assert chart["peak"] == script.PROOFS_PER_POLL * 60 / script.STEP_SECS
    # partitions seen finishing, with their synthesis + gpu time
    lat = fleet_latency(NAME, 3600)
    [row] = lat["partitions"]
    assert (row["kind"], row["n"]) == ("snap-update", want.partitions)
    assert row["p50"] == pytest.approx((script.PART_SYNTH_MS + script.PART_GPU_MS) / 1000)


def test_the_timeline_draws_the_observed_busy_stretches(observed) -> None:
    tl = build_fleet_timeline(NAME, "60m")
    lanes = {lane.key: lane for lane in tl.lanes}
    assert set(lanes) == {"0", "1"}
    busy = sum(b.end - b.start for b in lanes["0"].bars)
    assert busy == pytest.approx(script.expected().observed_secs * script.expected().busy_share)
    assert lanes["1"].bars == []
    assert all(b.state == "observed" and "poll resolution" in b.title for b in lanes["0"].bars)


def test_the_history_page_of_a_source_renders(observed, client, django_user_model) -> None:
    client.force_login(django_user_model.objects.create_user("op", password="pw-123456789"))
    page = client.get(f"/history/{NAME}?range=1h")
    assert page.status_code == 200
    html = page.content.decode()
    assert "observed at poll resolution" in html and "busy share (observed)" in html
    assert 'data-chart="throughput" data-total="60"' in html
    assert 'data-cost="box"' in html and "no price (busy share only)" in html
    assert 'data-window="1h" data-busy="0.500000"' in html


def test_metrics_carry_the_fleet_engines_counters(observed, client, settings) -> None:
    settings.METRICS_PUBLIC = True
    body = client.get("/metrics").content.decode()
    assert f'vastmanager_jobs_completed_total{{engine="{NAME}",kind="snap-update"}} 60.0' in body
    assert f'vastmanager_jobs_failed_total{{engine="{NAME}",kind="window-post"}} 4.0' in body
    assert (f'vastmanager_phase_duration_seconds_count{{engine="{NAME}",kind="snap-update",phase="gpu"}} '
            f'{script.expected().partitions}.0') in body
    assert f'vastmanager_engine_busy_ratio{{engine="{NAME}",window="1h"}} 0.5' in body
    assert f'vastmanager_engine_cost_per_hour{{engine="{NAME}"}}' not in body  # no price: busy share only
    if shutil.which("promtool") is None:
        pytest.skip("promtool missing (Debian package `prometheus`): the exposition was not linted")
    lint = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_a_removed_source_leaves_no_series(observed, client, settings) -> None:
    from statuspanel.models import Source

    settings.METRICS_PUBLIC = True
    from gpu_engine import wire

    Source.objects.filter(name=NAME).delete()
    wire.forget_engine(wire.default_cache(), NAME)  # what the running collector does when it sees the removal
    cost.clear_cache()
    body = client.get("/metrics").content.decode()
    assert f'engine="{NAME}"' not in body


def test_a_fleet_engine_header_links_to_its_history(observed) -> None:
    from gpu_engine import wire
    from statuspanel.render.engine import render_engine_with_tally

    snap = wire.default_cache().get(wire.snapshot_key(NAME))
    assert snap is not None, "the collector's last snapshot of the source"
    html, _ = render_engine_with_tally(snap)
    assert f'href="/history/{NAME}"' in html
