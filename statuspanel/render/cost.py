"""The cost report (statuspanel/fleet/cost.py) as table rows: one per window, for a box or the fleet.

Money is shown with the currency setting's code, two decimals (four under one unit, where a cheap
proof would otherwise read 0.00); a box without a price shows busy share and proofs only.
"""
from __future__ import annotations

import logging
from typing import Any

from gpu_engine.kinds import kind_label

log = logging.getLogger(__name__)


def money(value: float | None, currency: str) -> str:
    if value is None:
        return "—"
    return f"{value:.2f} {currency}" if abs(value) >= 1 else f"{value:.4f} {currency}"


def _raw(value: float | None) -> str:
    """The exact figure for a data- attribute (tests and scripts read it; people read the text)."""
    return "" if value is None else f"{value:.9g}"


def _row(window: str, answer: dict[str, Any], currency: str) -> dict[str, Any]:
    share = answer.get("busy_share")
    return {
        "window": window,
        "busy_share": share,
        "busy_text": f"{100.0 * share:.0f}%" if share is not None else "—",
        "proofs": answer.get("proofs_total", 0),
        "priced": answer.get("spent") is not None,
        "spent": money(answer.get("spent"), currency),
        "idle_cost": money(answer.get("idle_cost"), currency),
        "spent_value": _raw(answer.get("spent")),
        "idle_value": _raw(answer.get("idle_cost")),
        "per_proof": [{"kind": k, "label": kind_label(k), "text": money(v, currency), "value": _raw(v)}
                      for k, v in sorted(answer.get("cost_per_proof", {}).items())],
    }


def cost_rows(report: dict[str, Any], engine_id: str) -> dict[str, Any] | None:
    """One box's rows (None when the report does not know it)."""
    windows = report["boxes"].get(engine_id)
    if not windows:
        return None
    first = next(iter(windows.values()))
    price = first.get("price_per_hour")
    return {"price": money(price, report["currency"]) if price is not None else None,
            "rows": [_row(w, a, report["currency"]) for w, a in windows.items()]}


def fleet_cost_rows() -> dict[str, Any] | None:
    """The fleet's rows for the summary (None when the report cannot be built: the panel still renders)."""
    from statuspanel.fleet import cost

    try:
        report = cost.report()
    except Exception:  # a database hiccup must not take the panel with it
        log.exception("cost report failed")
        return None
    priced = sorted(e for e, w in report["boxes"].items() if next(iter(w.values()))["price_per_hour"] is not None)
    return {"currency": report["currency"], "priced": priced, "boxes": len(report["boxes"]),
            "rows": [_row(w, a, report["currency"]) for w, a in report["fleet"].items()]}
