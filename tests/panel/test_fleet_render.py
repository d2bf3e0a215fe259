"""An engine of the fleet on the panel: its source state, the race warning with job and partition,
cuzk's allocations and buffers, whole labels, and the tally it adds to the fleet summary."""
from __future__ import annotations

import html
import json
import re

import pytest

from statuspanel.render.engine import engine_context, render_engine, render_engine_with_tally
from statuspanel.render.fleet import RateMeter, fleet_summary
from tests.panel.fleet_snapshots import RACE_JOB, UNKNOWN_KIND, cuzk_engine, our_engine

pytestmark = pytest.mark.usefixtures("fresh_render_caches")


def _badge(markup: str) -> tuple[str, str]:
    m = re.search(r'<span class="liveness (src-\w+)" data-liveness data-source-state="(\w+)"', markup)
    assert m, "no source badge"
    return m.group(1), m.group(2)


def _tally(markup: str) -> dict:
    return json.loads(html.unescape(re.search(r'data-tally="([^"]*)"', markup).group(1)))


def test_online_source_shows_kind_transport_and_poll_latency():
    markup = render_engine(cuzk_engine("box-a", transport="ssh", poll_ms=12.5))
    assert _badge(markup) == ("src-online", "online")
    assert '<span class="tag source-kind" title="source kind">cuzk</span>' in markup
    assert '<span class="tag transport" title="transport">ssh</span>' in markup
    assert 'poll <span data-bind="poll">12 ms</span>' in markup and 'data-poll="12 ms"' in markup
    assert 'class="engine-body src-online"' in markup


def test_stale_source_is_greyed_with_its_age_and_stops_ticking():
    markup = render_engine(cuzk_engine("box-s", state="stale", last_ok=4.2))
    assert _badge(markup) == ("src-stale", "stale")
    assert 'class="engine-body src-stale"' in markup  # greyed by the stylesheet
    assert 'last good poll <span class="live" data-live-secs="4.2">4.2 s</span> ago' in markup
    workers = markup[markup.index('data-region="workers"'):markup.index('data-region="pipelines"')]
    assert "data-live-secs" not in workers  # a silent source's workers do not seem to keep proving


@pytest.mark.parametrize("state,error", [("unreachable", "connection refused (10.77.0.2:9820)"),
                                         ("unreachable", "401 Unauthorized: the token was refused"),
                                         ("malformed", "gpu_workers[0].state: expected a string, got 3")])
def test_failing_source_shows_the_reason_whole(state, error):
    markup = render_engine(cuzk_engine("box-f", state=state, error=error, last_ok=None, poll_ms=None))
    assert _badge(markup) == (f"src-{state}", state)
    assert f'<span class="source-error" title="{html.escape(error)}">{html.escape(error)}</span>' in markup
    assert "never reached" in markup
    assert _tally(markup)["failing"] is True
    assert 'data-region="workers"' not in markup  # nothing was ever read: the summary row alone


def test_a_source_that_dropped_keeps_its_last_data_greyed():
    markup = render_engine(cuzk_engine("box-d", state="unreachable", error="timeout: no answer within 2 s",
                                       last_ok=42.0))
    assert 'class="engine-body src-unreachable"' in markup and 'data-region="workers"' in markup
    assert "last good poll" in markup and "42.0 s" in markup


def test_race_warning_names_job_and_partition_and_marks_the_cells():
    markup = render_engine(cuzk_engine("box-r", race=True))
    region = markup[markup.index('data-region="consistency"'):markup.index('data-region="summary"')]
    assert 'role="alert"' in markup and 'data-count="2"' in region
    for p in (5, 6):
        assert f'<li data-job-id="{RACE_JOB}" data-partition="{p}"' in region
    assert f'<span class="job-id" title="{RACE_JOB}">{RACE_JOB}</span> partition <b>5</b>' in region
    assert "partition in gpu, but no worker is proving it" in region
    assert 'data-warnings="2"' in markup  # the badge in the summary row
    cells = re.findall(r'<span class="cell phase-gpu( inconsistent)?" data-index="(\d+)"', markup)
    assert {i for flag, i in cells if flag} == {"5", "6"}
    assert _tally(markup)["warnings"] == 2


def test_consistent_engine_has_no_warning_region():
    markup = render_engine(cuzk_engine("box-ok"))
    assert 'data-region="consistency"' not in markup and "warn-badge" not in markup


def test_long_warning_lists_are_cut_but_counted():
    snap = cuzk_engine("box-many")
    snap["consistency"] = [{"job_id": f"job-{i}", "partition": i, "worker_id": 1, "problem": "not-in-gpu"}
                           for i in range(1024)]
    markup = render_engine(snap)
    assert markup.count("<li data-job-id=") == 8 and "and 1016 more" in markup and 'data-count="1024"' in markup
    assert "worker proving a partition that is not in gpu" in markup  # the code in words
    assert "· worker <b>W1</b>" in markup


def test_cuzk_allocations_with_bytes_and_evictability_and_buffers():
    markup = render_engine(cuzk_engine("box-c"))
    region = markup[markup.index('data-region="cuzk"'):]
    assert '<tr data-pool="SRS" data-circuit="snap-update-32g">' in region
    assert '<tr data-pool="PCE" data-circuit="snap-update-32g">' in region
    assert "33.0 GiB" in region and "25.0 GiB" in region  # 35433480192 and 26843545600 bytes
    assert 'title="35433480192 bytes"' in region
    assert region.count('<td class="evict-no">no</td>') == 2
    assert "58.0 GiB" in region and "0 B evictable" in region
    for name, n in (("synth_in_flight", 4), ("provers_in_flight", 2), ("pending_handles", 1)):
        assert f'data-buffer="{name}" title="{name}">{name.replace("_", " ")} <b>{n}</b>' in region


def test_our_engines_have_no_cuzk_region():
    assert 'data-region="cuzk"' not in render_engine(our_engine("ours-1"))


def test_labels_are_whole_and_unknown_kinds_shown_as_they_come():
    markup = render_engine(cuzk_engine("box-k"))
    assert ">SnapDeals Update (ReplicaUpdate)<" in markup
    assert f">{UNKNOWN_KIND}<" in markup and f'title="{UNKNOWN_KIND} ({UNKNOWN_KIND})"' in markup


def test_cuzk_only_fields_of_wrong_type_are_left_out_not_fatal():
    snap = cuzk_engine("box-odd")
    snap.update(allocations={"srs": "x", "pce": [None, {"bytes": "many"}]}, buffers={"a": "b", "c": True},
                consistency=[None, {"partition": [1]}], source={"state": 5})
    snap["gpu_workers"][0]["gpu_ordinal"] = [0]
    snap["pipelines"][0]["partitions"][0]["index"] = {"x": 1}
    markup = render_engine(snap)
    assert 'data-region="header"' in markup and "src-unknown" in markup


def test_tally_counts_workers_gpus_and_phases():
    ctx = engine_context(cuzk_engine("box-t"))
    t = ctx["tally"]
    assert t["workers"] == {"proving": 2, "idle": 0, "error": 0}
    assert t["gpus"] == {"proving": 1, "idle": 0, "error": 0}  # both workers share GPU 0
    assert t["phases"]["done"] == 5 and t["phases"]["gpu"] == 2 and t["phases"]["pending"] == 18
    assert sum(t["phases"].values()) == 32


def test_summary_adds_online_engines_and_lists_failing_sources():
    tallies = [render_engine_with_tally(s)[1] for s in (
        cuzk_engine("box-1"), cuzk_engine("box-2", race=True), our_engine("ours"),
        cuzk_engine("box-down", state="unreachable", error="timeout"),
        cuzk_engine("box-old", state="stale"))]
    s = fleet_summary(tallies, offline=1)
    assert (s["online"], s["engines"]) == (3, 6)
    assert [f["id"] for f in s["failing"]] == ["box-down"]
    assert s["workers"] == {"proving": 2 + 0 + 1, "idle": 2 + 1, "error": 0}
    assert s["gpus"]["proving"] == 2 and s["warnings"] == 2
    assert s["phases"]["gpu"] == 2 + 2 + 1  # box-down's and box-old's last data are not counted


def test_proofs_per_minute_from_the_completed_counter():
    meter = RateMeter()
    assert meter.observe("e", 100.0, 10) is None  # one sample: no rate yet
    assert meter.observe("e", 102.0, 11) is None  # under the minimum span
    assert meter.observe("e", 130.0, 20) == pytest.approx(20.0)
    assert meter.observe("e", 190.0, 40) == pytest.approx(60.0 * 30 / 90)  # the window keeps one older sample
    assert meter.observe("e", 200.0, 2) is None  # restarted: counting starts again
