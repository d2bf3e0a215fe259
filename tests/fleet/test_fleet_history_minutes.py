"""How polls fold into minutes (statuspanel/fleet/history.py), without a database: restarts, gaps, splits."""
from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from statuspanel.fleet.cost import parse_local_prices
from statuspanel.fleet.history import FleetHistory, counter_deltas


def _snap(done: int, busy: bool, uptime: float = 100.0) -> dict:
    return {"uptime_secs": uptime, "counters": {"total_completed": done, "completed_by_kind": {"porep-c2": done}},
            "gpu_workers": [{"worker_id": 0, "gpu_ordinal": 0, "state": "proving" if busy else "idle"}]}


def test_a_daemon_restart_counts_what_it_did_since_and_never_a_negative_delta() -> None:
    before = {"total_completed": 50, "completed_by_kind": {"porep-c2": 50}}
    after = {"total_completed": 2, "completed_by_kind": {"porep-c2": 2}}
    assert counter_deltas(before, after, 500.0, 4.0) == ({"porep-c2": 2}, {}, True)
    # the uptime going down alone (counters that happen to be higher again) is a restart too
    assert counter_deltas(before, {"completed_by_kind": {"porep-c2": 60}}, 500.0, 4.0)[2] is True
    assert counter_deltas(before, {"completed_by_kind": {"porep-c2": 53}}, 500.0, 510.0) == ({"porep-c2": 3}, {},
                                                                                              False)
    assert counter_deltas(None, after, None, 4.0) == ({}, {}, False)  # the first poll is a baseline


def test_a_daemon_that_gives_no_kinds_has_its_totals_counted_as_other() -> None:
    before = {"total_completed": 7, "total_failed": 1, "completed_by_kind": {}, "failed_by_kind": {}}
    after = {"total_completed": 10, "total_failed": 1, "completed_by_kind": {}, "failed_by_kind": {}}
    assert counter_deltas(before, after, 50.0, 60.0) == ({"other": 3}, {}, False)


def test_polls_split_at_minute_boundaries_and_a_long_silence_is_not_observed() -> None:
    written = []
    clock = [600.0]
    history = FleetHistory(written.extend, clock=lambda: clock[0])
    for t, busy in ((600.0, False), (650.0, True), (670.0, True), (760.0, False), (763.0, True)):
        clock[0] = t
        history.observe("box", _snap(int(t), busy), interval_secs=10.0)
    history.flush(closing=True)
    minutes = {m.minute: m for m in written}
    first, second, third = minutes[600.0], minutes[660.0], minutes[720.0]
    # 600 -> 650 is 50 s, more than the gap allowed (4 intervals): not observed
    # 650 -> 670 (busy at 670): 10 s in the first minute, 10 s in the second
    assert first.lanes["gpu0"].observed == pytest.approx(10.0) and first.lanes["gpu0"].spans == [[50.0, 60.0]]
    assert second.lanes["gpu0"].busy == pytest.approx(10.0)
    assert second.lanes["gpu0"].spans == [[0.0, 10.0]]
    # 760 -> 763 (busy at 763): 3 s busy in the third minute; the 670 -> 760 silence observed nowhere
    assert third.lanes["w0"].observed == pytest.approx(3.0) and third.lanes["w0"].busy == pytest.approx(3.0)
    assert sum(sum(m.completed.values()) for m in written) == 763 - 600


@pytest.mark.parametrize(("text", "expected"), [("", (None, {})), ("2.5", (2.5, {})),
                                                ("a=1.5, b=2", (None, {"a": 1.5, "b": 2.0})),
                                                ("3, a=1", (3.0, {"a": 1.0}))])
def test_local_engine_prices_parse(text: str, expected) -> None:
    assert parse_local_prices(text) == expected


@pytest.mark.parametrize("text", ["abc", "a=-1", "a=x"])
def test_a_bad_local_engine_price_is_a_clear_configuration_error(text: str) -> None:
    with pytest.raises(ImproperlyConfigured, match="ENGINE_PRICE_PER_HOUR"):
        parse_local_prices(text)
