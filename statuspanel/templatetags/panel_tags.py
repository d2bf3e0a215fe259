"""Formatting filters of the panel; static/statuspanel/panel.js mirrors `duration` for live ticking."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from django import template

register = template.Library()

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


@register.filter
def duration(secs: Any) -> str:
    """12.3 s, 4m 05s, 2h 03m: compact and stable in width as it grows."""
    if secs is None or secs == "":
        return "—"
    try:
        value = max(0.0, float(secs))
    except (TypeError, ValueError):
        return "—"
    if value < 60:
        return f"{value:.1f} s"
    whole = int(value)
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {(whole % 3600) // 60:02d}m"


@register.filter
def ms_duration(ms: Any) -> str:
    if ms is None or ms == "":
        return "—"
    try:
        return duration(float(ms) / 1000.0)
    except (TypeError, ValueError):
        return "—"


@register.filter
def ms_to_secs(ms: Any) -> float | str:
    """Seconds for a data-live-secs attribute (empty when unknown)."""
    try:
        return round(float(ms) / 1000.0, 3)
    except (TypeError, ValueError):
        return ""


@register.filter
def human_bytes(n: Any) -> str:
    try:
        value = float(n)
    except (TypeError, ValueError):
        return "—"
    unit = 0
    while abs(value) >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{value:.0f} {_UNITS[unit]}" if unit == 0 else f"{value:.1f} {_UNITS[unit]}"


@register.filter
def pct(value: Any, digits: int = 0) -> str:
    try:
        return f"{float(value):.{int(digits)}f}%"
    except (TypeError, ValueError):
        return "—"


@register.filter
def unix_iso(ts: Any) -> str:
    """A unix time as ISO-8601 UTC (for <time datetime>)."""
    try:
        return datetime.fromtimestamp(float(ts), tz=timezone.utc).isoformat(timespec="seconds")
    except (TypeError, ValueError, OverflowError, OSError):
        return ""


@register.filter
def worker_label(worker_id: Any) -> str:
    """`W0` for cuzk's numeric worker ids; an engine's own string ids (`cpu0-w0`) as they are."""
    if worker_id is None or worker_id == "":
        return "—"
    if isinstance(worker_id, int) and not isinstance(worker_id, bool):
        return f"W{worker_id}"
    return str(worker_id)


@register.filter
def phase_title(part: dict[str, Any]) -> str:
    """The hover text of a waterfall cell: partition, phase, timings, worker and any error, in full."""
    bits = [f"partition {part.get('index')}", str(part.get("state"))]
    for label, key in (("synth", "synth_ms"), ("gpu", "gpu_ms"), ("finalize", "finalize_ms")):
        if part.get(key) is not None:
            bits.append(f"{label} {ms_duration(part[key])}")
    if part.get("worker_id") is not None:
        bits.append(f"worker {worker_label(part['worker_id'])}")
    text = " · ".join(bits)
    if part.get("error"):
        text += f"\nerror: {part['error']}"
    return text
