"""200 flapping sources (real HTTP servers on loopback, answering a snapshot and a 503 in turn):
each keeps at most FLEET_EVENT_BURST state-change rows per window plus one `flapping` summary, the
writer's backlog stays bounded, and once the flapping stops the writer is idle within seconds with
every source's row showing it online."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db.models import Count

from gpu_engine import wire
from statuspanel.fleet.collector import FleetCollector
from statuspanel.fleet.events import StateChange, StateChangeLog
from statuspanel.fleet.transport import SourceConfig
from statuspanel.fleet.vocabulary import EVENT_FLAPPING
from statuspanel.models import Source, SourceEvent
from tests.fleet.conftest import wait_until

SOURCES = 200
BURST = 3
FLAP_SECS = 12.0
ROOT = Path(__file__).resolve().parents[2]


def _change(name: str, state: str, at: float) -> StateChange:
    return StateChange(1, name, "", state, "" if state == "online" else "http", "", at)


def test_a_flapping_source_keeps_a_burst_per_window_and_one_summary() -> None:
    now = [0.0]
    written: list[StateChange] = []
    log = StateChangeLog(lambda events, current: written.extend(events), burst=3, window_secs=60.0,
                         clock=lambda: now[0])
    for i in range(40):  # 40 changes in 20 s
        now[0] = i * 0.5
        log.add(_change("box", "online" if i % 2 == 0 else "unreachable", 1000.0 + i))
    log.add(_change("calm", "online", 1000.0))
    log.flush()
    assert [c.name for c in written] == ["box"] * 3 + ["calm"]
    now[0] = 61.0  # the window closed: its summary is written with the next batch
    log.flush()
    summary = written[-1]
    assert summary.reason == EVENT_FLAPPING and summary.state == "unreachable"
    assert summary.error.startswith("flapping: 37 more changes in 60 s not kept one by one (online ×18, "
                                    "unreachable ×19)")
    assert (log.kept, log.suppressed, log.written) == (4, 37, 5)


@pytest.mark.django_db(transaction=True)
def test_200_flapping_sources_keep_a_bounded_number_of_rows_and_the_writer_keeps_up(settings,
                                                                                   clean_panel_cache) -> None:
    settings.FLEET_EVENT_BURST = BURST
    settings.FLEET_EVENT_WINDOW_SECS = 600.0  # longer than the test: one window per source
    fleet = subprocess.Popen([sys.executable, "-m", "tests.fleet.flapping_fleet", str(SOURCES)], cwd=ROOT,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        ports = json.loads(fleet.stdout.readline())
        Source.objects.bulk_create([Source(id=i + 1, name=f"flap-{i:03d}", kind="cuzk",
                                           url=f"http://127.0.0.1:{port}") for i, port in enumerate(ports)])
        configs = [SourceConfig(id=i + 1, name=f"flap-{i:03d}", kind="cuzk", transport="http",
                                url=f"http://127.0.0.1:{port}", interval_secs=1.0)
                   for i, port in enumerate(ports)]
        collector = FleetCollector(load_sources=lambda: configs, reload_secs=1.0).start()
        try:
            cpu0 = time.process_time()  # this process: the collector and its writer (the servers run apart)
            time.sleep(FLAP_SECS)
            cpu = 100 * (time.process_time() - cpu0) / FLAP_SECS
            fleet.stdin.write("calm\n")
            fleet.stdin.flush()
            assert fleet.stdout.readline().strip() == "calm"
            stopped = time.monotonic()
            backlog_then = collector.events.pending
            wait_until(lambda: all((s := wire.default_cache().get(wire.snapshot_key(c.name))) and
                                   s["source"]["state"] == "online" for c in configs), 60, "every source online")
            wait_until(lambda: collector.events.pending == 0 and
                       Source.objects.filter(state="online").count() == SOURCES, 30, "the writer idle")
            drained = time.monotonic() - stopped
            log = collector.events
            changes, backlog = log.kept + log.suppressed, log.max_pending
        finally:
            collector.stop()
    finally:
        fleet.stdin.close()
        fleet.wait(30)
    rows = dict(SourceEvent.objects.values_list("source_name").annotate(n=Count("id")))
    summaries = SourceEvent.objects.filter(reason=EVENT_FLAPPING).count()
    print(f"{SOURCES} flapping sources, {FLAP_SECS:g} s: {changes} state changes, {sum(rows.values())} rows kept "
          f"({summaries} flapping summaries); writer backlog at most {backlog} rows, {backlog_then} when the "
          f"flapping stopped; every source online and its row written {drained:.1f} s after; collector CPU "
          f"{cpu:.0f}% of a core while flapping")
    assert changes > SOURCES * BURST, "the sources really flapped"
    assert max(rows.values()) <= BURST + 1
    assert summaries >= SOURCES // 2
    assert backlog <= SOURCES * BURST
    assert set(Source.objects.values_list("state", flat=True)) == {"online"}
