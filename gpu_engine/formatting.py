"""Human-readable durations and sizes, one way everywhere (panel, admin, console).

static/statuspanel/panel.js repeats `duration` for the live tick between snapshots; keep the two
in step (tests/panel compares them).
"""
from __future__ import annotations

from typing import Any

NONE_TEXT = "—"
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def duration(secs: Any) -> str:
    """12.3 s, 4m 05s, 2h 03m: compact and stable in width as it grows; "—" when unknown."""
    if secs is None or secs == "":
        return NONE_TEXT
    try:
        value = max(0.0, float(secs))
    except (TypeError, ValueError):
        return NONE_TEXT
    if value != value or value == float("inf"):
        return NONE_TEXT
    if value < 60:
        return f"{value:.1f} s"
    whole = int(value)
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {(whole % 3600) // 60:02d}m"


def ms_duration(ms: Any) -> str:
    """`duration` of a value in milliseconds."""
    if ms is None or ms == "":
        return NONE_TEXT
    try:
        return duration(float(ms) / 1000.0)
    except (TypeError, ValueError):
        return NONE_TEXT


def latency_ms(ms: Any) -> str:
    """A short latency (a poll's round trip): 850 µs, 12 ms, 1.25 s; "—" when unknown."""
    try:
        value = float(ms)
    except (TypeError, ValueError):
        return NONE_TEXT
    if value != value or value == float("inf"):
        return NONE_TEXT
    value = max(0.0, value)
    if value < 1:
        return f"{value * 1000:.0f} µs"
    if value < 1000:
        return f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"
    return f"{value / 1000:.2f} s" if value < 10_000 else duration(value / 1000)


def human_bytes(n: Any) -> str:
    """512 B, 1.5 KiB, 33.0 GiB (binary units); "—" when unknown."""
    try:
        value = float(n)
    except (TypeError, ValueError):
        return NONE_TEXT
    unit = 0
    while abs(value) >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{value:.0f} {_UNITS[unit]}" if unit == 0 else f"{value:.1f} {_UNITS[unit]}"


def worker_label(worker_id: Any) -> str:
    """`W0` for numeric worker ids (as cuzk shows them); string ids as they are."""
    if worker_id is None or worker_id == "":
        return NONE_TEXT
    if isinstance(worker_id, int) and not isinstance(worker_id, bool):
        return f"W{worker_id}"
    return str(worker_id)
