"""The panel page with a fleet: the summary on top adds up every engine, a handful of engines start
open, more start collapsed to their summary rows (without activity queries), fleet sources and
local engines side by side; and the live frames carry what the page needs to keep the summary."""
from __future__ import annotations

import html
import json
import re

import pytest
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model

from gpu_engine import wire
from statuspanel.render.fleet import COLLAPSE_OVER
from tests.credentials import TOKEN
from tests.panel.fleet_snapshots import RACE_JOB, cuzk_engine, our_engine, store
from tests.panel.helpers import ORIGIN, communicator

pytestmark = pytest.mark.usefixtures("clean_panel_cache", "fresh_render_caches")


@pytest.fixture
def user_client(client, db):
    client.force_login(get_user_model().objects.create_user("op", password="pw-for-test-only"))
    return client


def _sum(body: str, key: str) -> str:
    m = re.search(rf'data-sum="{re.escape(key)}">([^<]*)<', body)
    assert m, key
    return m.group(1)


def _sections(body: str) -> list[tuple[str, bool]]:
    return [(m.group(2), "collapsed" in m.group(1))
            for m in re.finditer(r'<section class="engine([^"]*)" id="engine-[^"]+" data-engine-id="([^"]+)"', body)]


def test_summary_on_top_counts_the_fleet(user_client):
    store(cuzk_engine("box-race", race=True))
    store(our_engine("ours-1"))
    store(cuzk_engine("box-down", state="unreachable", error="connection refused", last_ok=None, poll_ms=None))
    body = user_client.get("/").content.decode()
    assert body.index('id="fleet"') < body.index('id="engines"')
    assert (_sum(body, "online"), _sum(body, "engines")) == ("2", "3")
    assert _sum(body, "workers.proving") == "1" and _sum(body, "workers.idle") == "3"
    assert _sum(body, "gpus.proving") == "1" and _sum(body, "gpus.idle") == "1"
    assert _sum(body, "phases.gpu") == "3" and _sum(body, "warnings") == "2"
    assert _sum(body, "failing") == "1" and 'data-engine-link="box-down"' in body
    assert _sections(body) == [("box-down", False), ("box-race", False), ("ours-1", False)]
    assert f'<li data-job-id="{RACE_JOB}" data-partition="5"' in body
    # Fleet sources keep their history on their own hosts: no activity region is built for them here.
    assert 'data-activity="box-race"' not in body


def test_many_engines_start_collapsed_to_their_rows(user_client, django_assert_max_num_queries):
    names = [f"box-{i:02d}" for i in range(50)]
    for i, name in enumerate(names):
        store(cuzk_engine(name, race=i == 7) if i % 2 else our_engine(name))
    with django_assert_max_num_queries(6):  # session, user, finished jobs: nothing per engine
        body = user_client.get("/").content.decode()
    sections = _sections(body)
    assert [n for n, _ in sections] == names and all(c for _, c in sections)
    assert _sum(body, "engines") == "50" and _sum(body, "online") == "50"
    assert "<noscript><style>" in body  # without JavaScript nothing stays hidden
    assert 'class="consistency row-region"' in body  # the race warning shows in the collapsed row


def test_a_handful_start_open(user_client):
    for i in range(COLLAPSE_OVER):
        store(our_engine(f"ours-{i}"))
    body = user_client.get("/").content.decode()
    assert len(_sections(body)) == COLLAPSE_OVER and not any(c for _, c in _sections(body))
    assert "<noscript><style>" not in body


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("api_token")
async def test_live_frame_of_a_fleet_engine_carries_its_state_and_tally():
    comm = communicator(f"/ws/status/?token={TOKEN}", headers=[ORIGIN])
    assert (await comm.connect())[0]
    for seq, state in ((1, "online"), (2, "unreachable")):
        snap = cuzk_engine("box-live", seq=seq, state=state, race=True,
                           error=None if state == "online" else "timeout after 3.0 s")
        await get_channel_layer().group_send(wire.STATUS_GROUP, wire.snapshot_message("box-live", seq, snap))
        frame = json.loads(await comm.receive_from(timeout=3))
        assert frame["engine_id"] == "box-live" and frame["snapshot"]["source"]["state"] == state
        tally = json.loads(html.unescape(re.search(r'data-tally="([^"]*)"', frame["html"]).group(1)))
        assert tally["state"] == state and tally["warnings"] == 2 and tally["failing"] is (state != "online")
        assert f'data-source-state="{state}"' in frame["html"]
    assert "timeout after 3.0 s" in frame["html"]
    await comm.disconnect()
