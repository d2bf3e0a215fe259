"""Cost of a priced box busy half the time: the panel (fleet summary, history page) and /metrics give the
busy share, cost per proof and idle cost the test computes itself from the script and the price."""
from __future__ import annotations

import re

import pytest

from statuspanel.fleet import cost
from tests.fleet import scripted_cuzk as script

pytestmark = pytest.mark.django_db(transaction=True)
NAME = "priced-box"
PRICE = 3.0


@pytest.fixture
def priced(clean_panel_cache):
    script.run_scenario(NAME, price=str(PRICE))
    cost.clear_cache()
    yield
    cost.clear_cache()


def _independent() -> dict[str, float]:
    want = script.expected()
    spent = PRICE * want.observed_secs / 3600
    return {"busy": want.busy_share, "spent": spent, "idle": spent * (1 - want.busy_share),
            "per_proof": spent / want.completed}   # one kind completes, so it carries the whole cost


def _table(html: str, scope: str) -> str:
    match = re.search(rf'<table class="cost" data-cost="{scope}">(.*?)</table>', html, re.S)
    assert match, f"no {scope} cost table"
    return match.group(1)


def _row_figures(table: str, window: str) -> dict[str, float]:
    row = re.search(rf'<tr data-window="{window}" data-busy="([^"]*)".*?</tr>', table, re.S)
    assert row, f"no {window} row"
    text = row.group(0)
    return {"busy": float(row.group(1)), "spent": float(re.search(r'data-spent="([^"]+)"', text).group(1)),
            "idle": float(re.search(r'data-idle-cost="([^"]+)"', text).group(1)),
            "per_proof": float(re.search(r'data-kind="snap-update" data-cost-per-proof="([^"]+)"', text).group(1))}


def _metric(body: str, name: str, labels: str) -> float:
    match = re.search(rf"^vastmanager_{name}\{{{re.escape(labels)}\}} (\S+)$", body, re.M)
    assert match, f"{name}{{{labels}}} missing"
    return float(match.group(1))


def test_panel_and_metrics_agree_on_busy_share_cost_per_proof_and_idle_cost(priced, client, settings,
                                                                             django_user_model) -> None:
    want = _independent()
    client.force_login(django_user_model.objects.create_user("op", password="pw-123456789"))
    settings.METRICS_PUBLIC = True
    for window in ("1h", "24h", "7d"):  # the ten observed minutes lie inside every window
        box = _row_figures(_table(client.get(f"/history/{NAME}").content.decode(), "box"), window)
        fleet = _row_figures(_table(client.get("/").content.decode(), "fleet"), window)
        body = client.get("/metrics").content.decode()
        scraped = {"busy": _metric(body, "engine_busy_ratio", f'engine="{NAME}",window="{window}"'),
                   "spent": _metric(body, "engine_cost", f'engine="{NAME}",window="{window}"'),
                   "idle": _metric(body, "engine_idle_cost", f'engine="{NAME}",window="{window}"'),
                   "per_proof": _metric(body, "engine_cost_per_proof",
                                        f'engine="{NAME}",kind="snap-update",window="{window}"')}
        for figures in (box, fleet, scraped):
            assert figures == pytest.approx(want, rel=1e-6)
        assert _metric(body, "engine_cost_per_hour", f'engine="{NAME}"') == PRICE


def test_a_box_without_a_price_shows_busy_share_only(client, django_user_model, clean_panel_cache) -> None:
    script.run_scenario("unpriced-box")
    cost.clear_cache()
    client.force_login(django_user_model.objects.create_user("op", password="pw-123456789"))
    table = _table(client.get("/history/unpriced-box").content.decode(), "box")
    assert "no price (busy share only)" in table and "data-spent" not in table
    assert 'data-window="1h" data-busy="0.500000"' in table
