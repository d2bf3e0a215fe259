"""The collector reads the Source table while it runs: sources added, edited, disabled or removed
take effect without a restart, and every state change is kept as a SourceEvent."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from gpu_engine import wire
from statuspanel.fleet.collector import FleetCollector
from statuspanel.models import Source, SourceEvent
from tests.fleet.conftest import wait_until
from tests.fleet.cuzk_server import CuzkServer

pytestmark = pytest.mark.django_db(transaction=True)  # the collector reads the table from its own threads


def _state(name: str) -> str | None:
    snap = wire.default_cache().get(wire.snapshot_key(name))
    return snap["source"]["state"] if snap else None


def test_added_edited_disabled_and_removed_sources_take_effect_live(collector) -> None:
    with CuzkServer("fixture") as good, CuzkServer("html") as bad:
        call_command("addsource", "box-a", "--kind", "cuzk", "--url", good.url, "--interval", "0.3")
        wait_until(lambda: _state("box-a") == "online", 10, "box-a online")

        call_command("addsource", "box-b", "--kind", "cuzk", "--url", good.url, "--interval", "0.3")
        wait_until(lambda: _state("box-b") == "online", 10, "box-b picked up while running")

        call_command("addsource", "box-a", "--kind", "cuzk", "--url", bad.url, "--interval", "0.3", "--replace")
        wait_until(lambda: _state("box-a") == "malformed", 10, "box-a's edit picked up")

        call_command("removesource", "box-b")
        wait_until(lambda: "box-b" not in wire.known_engines() and _state("box-b") is None, 5, "box-b forgotten")

        Source.objects.filter(name="box-a").update(enabled=False)
        wait_until(lambda: _state("box-a") is None, 5, "box-a dropped when disabled")
        assert set(collector.states) == set()


def test_state_changes_are_kept_and_outlive_the_source(collector) -> None:
    with CuzkServer("fixture") as server:
        call_command("addsource", "box-c", "--kind", "cuzk", "--url", server.url, "--interval", "0.3")
        wait_until(lambda: Source.objects.filter(name="box-c", state="online").exists(), 10, "online kept")
        server.mode = "unauthorized"
        wait_until(lambda: Source.objects.filter(name="box-c", state="unreachable").exists(), 10, "unreachable kept")
    source = Source.objects.get(name="box-c")
    assert source.last_error.startswith("401")
    events = list(SourceEvent.objects.filter(source_name="box-c").order_by("at", "id"))
    assert [(e.previous, e.state, e.reason) for e in events] == [("", "online", ""),
                                                                 ("online", "unreachable", "unauthorized")]
    assert events[0].source_id == source.id
    call_command("removesource", "box-c")
    kept = SourceEvent.objects.filter(source_name="box-c")
    assert kept.count() == 2 and all(e.source_id is None for e in kept)  # "when did box-c drop": still known


def test_old_state_changes_are_pruned(clean_panel_cache) -> None:
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    for days in (40, 31, 1):
        SourceEvent.objects.create(source_name="old-box", at=now - timedelta(days=days), state="unreachable")
    collector = FleetCollector(reload_secs=0.2, event_retention_days=30).start()
    try:
        wait_until(lambda: SourceEvent.objects.count() == 1, 10, "events past 30 days pruned")
    finally:
        collector.stop()
    assert SourceEvent.objects.get().at > now - timedelta(days=2)
    assert FleetCollector(load_sources=list).event_retention_days == 0  # no table, nothing to prune
