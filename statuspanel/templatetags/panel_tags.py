"""Template filters of the panel; the formatting itself lives in gpu_engine.formatting."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from django import template

from gpu_engine.formatting import duration, human_bytes, ms_duration, worker_label

register = template.Library()

# The shared formatting helpers, as template filters.
for _helper in (duration, human_bytes, ms_duration, worker_label):
    register.filter(_helper.__name__, _helper)


@register.filter
def ms_to_secs(ms: Any) -> float | str:
    """Seconds for a data-live-secs attribute (empty when unknown)."""
    try:
        return round(float(ms) / 1000.0, 3)
    except (TypeError, ValueError):
        return ""


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


@register.filter
def share(value: Any) -> str:
    """A 0..1 share as a whole percentage (a timeline lane's busy share)."""
    try:
        return f"{100.0 * float(value):.0f}%"
    except (TypeError, ValueError):
        return "—"


@register.filter
def window_text(secs: Any) -> str:
    """A chart window in words: "hour", "24 h"."""
    secs = float(secs)
    return "hour" if secs == 3600 else f"{secs / 3600:g} h" if secs % 3600 == 0 else f"{secs / 60:g} min"


@register.filter
def minutes_text(minutes: Any) -> str:
    return window_text(float(minutes) * 60)


@register.filter
def latency_tables(partitions: Any, jobs: Any) -> list[tuple[Any, str]]:
    """The two latency tables with their titles, for one loop in the template."""
    return [(partitions, "partition"), (jobs, "job")]
