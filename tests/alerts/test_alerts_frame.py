"""The alerts frame: the whole set of firing alerts, both forms encoded once, the strip drawn whole
(labels and ids never cut, text escaped), never over the server's frame limit."""
from __future__ import annotations

import json

import pytest

from statuspanel.alerts.evaluator import Evaluator
from statuspanel.alerts.panel import acknowledge, firing_alerts, silence
from statuspanel.stream.alerts import encode_frames, group_message
from tests.alerts.conftest import Feed, source_snapshot

pytestmark = pytest.mark.django_db

LONG = "box-" + "x" * 100 + "<&>"


def _fire(*names: str) -> list[dict]:
    from django.core.management import call_command

    call_command("setalertrule", "source-down", "--for", "0")
    evaluator = Evaluator(snapshots=Feed())
    evaluator.snapshots.snaps = [source_snapshot(n, "unreachable") for n in names]
    assert evaluator.lease.acquire_or_renew()
    evaluator.evaluate_once()
    return firing_alerts()


def test_json_frame_carries_the_set_and_the_html_frame_adds_the_strip() -> None:
    alerts = _fire("box-1", LONG)
    as_json, as_html = encode_frames(alerts, 7, now=1_000_000.0)
    frame, framed = json.loads(as_json), json.loads(as_html)
    assert frame == {"type": "alerts", "seq": 7, "server_time": 1_000_000.0, "alerts": alerts}
    assert {k: v for k, v in framed.items() if k != "html"} == frame
    html = framed["html"]
    assert f'data-engine="{LONG.replace("<&>", "&lt;&amp;&gt;")}"' in html  # the whole id, escaped
    assert "<&>" not in html
    assert html.count('class="alert sev-critical') == 2 and "source-down" in html
    assert group_message(7, (as_json, as_html)) == {"type": "status.alerts", "seq": 7, "json": as_json,
                                                    "html": as_html}


def test_acknowledged_and_silenced_alerts_say_by_whom() -> None:
    alerts = _fire("box-1", "box-2")
    acknowledge(alerts[0]["id"], "alice")
    silence(alerts[1]["id"], 30, "bob")
    html = json.loads(encode_frames(firing_alerts(), 1)[1])["html"]
    assert "acknowledged by <b>alice</b>" in html and "silenced by <b>bob</b>" in html
    assert 'class="alert sev-critical acked"' in html and 'class="alert sev-critical silenced"' in html
    assert html.count("data-alert-ack>") == 1  # the acknowledged one offers no second acknowledge


def test_no_alerts_is_an_empty_set() -> None:
    frame = json.loads(encode_frames([], 3)[1])
    assert frame["alerts"] == [] and "No alert is firing" in frame["html"]


def test_too_many_alerts_for_one_frame_send_the_newest_and_count_the_rest(settings) -> None:
    alerts = _fire(*[f"box-{i:03d}" for i in range(40)])
    settings.WS_MAX_FRAME_BYTES = 12_000
    as_json, as_html = encode_frames(alerts, 1)
    assert max(len(as_json), len(as_html)) <= 12_000
    frame = json.loads(as_json)
    assert 0 < len(frame["alerts"]) < 40 and frame["omitted"] == 40 - len(frame["alerts"])
    assert frame["alerts"] == alerts[:len(frame["alerts"])]  # the newest first
    assert f'data-alerts-omitted="{frame["omitted"]}"' in json.loads(as_html)["html"]
