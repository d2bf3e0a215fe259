"""End to end over a cuzk-like stand-in on loopback, through the real fleet collector and the
panel's cache: the split-proving race held fires `tracker-inconsistent` after 3 snapshots in a row
(one notification) and resolves when the stand-in recovers; idle workers with a queue depth fire
`gpu-idle-while-queued`."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from statuspanel.alerts.models import Alert
from statuspanel.fleet.transport import SourceConfig
from tests.alerts.receivers import WebhookReceiver
from tests.fleet.conftest import wait_until
from tests.fleet.cuzk_server import CuzkServer

pytestmark = pytest.mark.django_db(transaction=True)

RACE, SETTLED = 1, 3  # tests/fleet/cuzk_server.py's race_steps


def test_a_held_race_fires_tracker_inconsistent_once_and_resolves(collect, running_evaluator) -> None:
    call_command("setalertrule", "gpu-idle-while-queued", "--disable")
    with CuzkServer("race", freeze_step=RACE) as cuzk, WebhookReceiver() as hook:
        call_command("addnotifier", "hook", "--kind", "webhook", "--url", hook.url)
        collect([SourceConfig(id=1, name="box-race", kind="cuzk", transport="http", url=cuzk.url,
                              interval_secs=0.3)])
        evaluator = running_evaluator()
        wait_until(lambda: hook.posts, 20, "the tracker-inconsistent notification")
        body = hook.bodies()[0]
        fired = sorted((a["rule"], a["engine"], a["subject"]) for a in body["alerts"])
        assert fired == [("tracker-inconsistent", "box-race", "ps-snap-1000-42-7#5"),
                         ("tracker-inconsistent", "box-race", "ps-snap-1000-42-7#6")]
        assert all("no-worker" in a["message"] and "3 snapshots in a row" in a["message"] for a in body["alerts"])
        assert evaluator.evaluations >= 3

        cuzk.freeze_step = SETTLED
        wait_until(lambda: len(hook.posts) >= 2, 20, "the resolution")
        resolved = hook.bodies()[1]["alerts"]
        assert sorted((a["rule"], a["state"]) for a in resolved) == [("tracker-inconsistent", "resolved")] * 2
    assert len(hook.posts) == 2
    assert set(Alert.objects.values_list("state", flat=True)) == {"resolved"}


def test_one_racy_snapshot_is_not_enough() -> None:
    """A race seen on one snapshot (a sampling instant) never fires: the streak starts again."""
    from statuspanel.alerts.observations import Observations
    from tests.fleet.cuzk_server import race_steps

    steps = dict(race_steps())
    obs = Observations()
    for seq, name in enumerate(["race", "consistent", "race", "consistent", "race"]):
        snap = dict(steps[name], engine_id="box", seq=seq, source={"state": "online"})
        snap.pop("consistency", None)
        obs.observe([snap], float(seq), 600.0)
    assert max(count for count, _ in obs.streaks.values()) == 1


def test_idle_workers_with_a_queue_fire_gpu_idle_while_queued(collect, running_evaluator) -> None:
    call_command("setalertrule", "gpu-idle-while-queued", "--for", "1")
    call_command("setalertrule", "tracker-inconsistent", "--disable")
    with CuzkServer("race", freeze_step=SETTLED) as cuzk:  # both workers idle; queue_depth 3
        collect([SourceConfig(id=1, name="box-idle", kind="cuzk", transport="http", url=cuzk.url,
                              interval_secs=0.3)])
        running_evaluator()
        wait_until(lambda: Alert.objects.filter(rule="gpu-idle-while-queued", state="firing").count() == 2, 20,
                   "both idle workers alerted")
    messages = sorted(Alert.objects.filter(state="firing").values_list("subject", "message"))
    assert [s for s, _ in messages] == ["W0", "W1"]
    assert messages[0][1].startswith("W0 on box-idle idle for ") and messages[0][1].endswith("while 3 jobs wait")
