"""Template filters of the panel; the formatting itself lives in gpu_engine.formatting."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from gpu_engine.formatting import duration, human_bytes, latency_ms, ms_duration, worker_label
from gpu_engine.kinds import kind_label

register = template.Library()

# The shared formatting helpers, as template filters.
for _helper in (duration, human_bytes, latency_ms, ms_duration, worker_label):
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
def waterfall_cells(pipe: dict[str, Any], ticking: Any = False) -> str:
    """A pipeline's waterfall: one cell per partition with its full hover text, escaped here.

    Each cell is a region of its own (a partition that moves on costs a cell in a patch frame, not
    the table). A cell in an open phase carries that phase's time so far as `data-live-secs` (and its
    name as `data-live-label`) while the data is current: the page grows it in the hover text, and
    its change between frames is no change (statuspanel/stream/patches.py).

    A cuzk job has 16 partitions and a fleet sends dozens of snapshots a second: one Python format
    per cell instead of a template loop keeps a render in single milliseconds (bench/fleet.py)."""
    out = []
    job = escape(str(pipe.get("job_id") or ""))
    for c in pipe.get("partitions") or []:
        flag = " inconsistent" if c.get("inconsistent") else ""
        index = escape(str(c.get("index")))
        open_field = c.get("open_field")
        live = ""
        if ticking and open_field and c.get(open_field) is not None:
            live = f' data-live-secs="{c[open_field] / 1000:.3f}" data-live-label="{open_field.split("_")[0]}"'
        out.append(f'<span class="cell phase-{escape(c["phase_class"])}{flag}" data-index="{index}" '
                   f'data-state="{escape(c["state"])}" title="{escape(phase_title(c))}" '
                   f'data-region="cell:{index}:{job}"{live}>{index}</span>')
    return mark_safe("\n".join(out))  # every interpolated string above is escaped


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


@register.filter
def lane_rects(lane: Any) -> str:
    """A timeline lane's gaps and bars as SVG <rect>s with their tooltips, escaped here.

    A 10-minute view of 8 busy workers has thousands of bars: one Python format per bar instead of a
    template loop keeps the region's render in tens of milliseconds (bench/history.py)."""
    out = []
    for g in lane.gaps:
        out.append(f'<rect class="tl-gap" x="{g.x_pct}%" y="0" width="{g.w_pct}%" height="100%" '
                   f'data-start="{g.start:.3f}" data-end="{g.end:.3f}"><title>{escape(g.title)}</title></rect>')
    for b in lane.bars:
        failed = " ph-failed" if b.failed else ""
        out.append(f'<rect class="tl-bar ph-{escape(b.phase)} st-{escape(b.state)}{failed}" x="{b.x_pct}%" y="15%" '
                   f'width="{b.w_pct}%" height="70%" data-job-id="{escape(b.job_id)}" data-index="{b.index}" '
                   f'data-worker="{escape(b.worker)}" data-phase="{escape(b.phase)}" data-state="{escape(b.state)}" '
                   f'data-start="{b.start:.3f}" data-end="{b.end:.3f}"><title>{escape(b.title)}</title></rect>')
    return mark_safe("".join(out))  # every interpolated string above is escaped


@register.filter
def source_title(src: dict[str, Any]) -> str:
    """The hover text of a fleet engine's state badge: state, how it is reached, why it fails."""
    bits = [f"{src.get('state')} · {src.get('kind_label')} over {src.get('transport')}"]
    if src.get("target"):
        bits.append(str(src["target"]))
    if src.get("failures"):
        bits.append(f"{src['failures']} failed polls in a row")
    # The last poll's round trip and the age of the last good one are shown beside the badge (and
    # change at every poll): the hover text keeps to what changes only with the source's state.
    text = " · ".join(bits)
    if src.get("error"):
        text += f"\n{src['error']}"
    return text


@register.filter
def buffer_label(name: Any) -> str:
    """cuzk's buffer counter names in words: `synth_in_flight` -> `synth in flight`."""
    return str(name).replace("_", " ")


@register.filter
def per_min(value: Any) -> str:
    """A rate per minute with one decimal ("—" while it cannot be measured yet)."""
    try:
        return f"{float(value):.1f}"
    except (TypeError, ValueError):
        return "—"


_PHASE_SUM_LABELS = {"synth_ms": "Σ synth", "gpu_ms": "Σ gpu", "finalize_ms": "Σ finalize"}


@register.filter
def phase_sum_label(field: Any) -> str:
    """A pipeline's phase column in words: its partitions' summed time in that phase."""
    return _PHASE_SUM_LABELS.get(str(field), str(field))


@register.filter
def clock_utc(ts: Any) -> str:
    """A unix time as the UTC wall clock to the second ("17:41:20 UTC"), for text a script may refine."""
    try:
        return datetime.fromtimestamp(float(ts), tz=timezone.utc).strftime("%H:%M:%S UTC")
    except (TypeError, ValueError, OverflowError, OSError):
        return "—"


@register.filter(name="kind_label")
def kind_label_filter(kind: Any) -> str:
    """A proof kind's full label, a registered circuit's included (the model field's choices know
    only the built-in kinds)."""
    return kind_label(str(kind))


@register.filter
def in_range(ticks: Any, bounds: str) -> list[Any]:
    """The axis ticks whose position (x_pct) lies within "lo,hi": the ends are kept clear for the
    lane's edge and the "now" label."""
    lo, hi = (float(b) for b in bounds.split(","))
    return [t for t in ticks if lo <= t["x_pct"] <= hi]


@register.filter
def axis_time(start: Any, end: Any) -> str:
    """A chart's left edge as a UTC time: "17:41", with the date when the range spans days."""
    try:
        begin = datetime.fromtimestamp(float(start), tz=timezone.utc)
        span = float(end) - float(start)
    except (TypeError, ValueError, OverflowError, OSError):
        return ""
    return begin.strftime("%b %d %H:%M" if span > 6 * 3600 else "%H:%M")


@register.filter
def latency_peak(latency: Any, title: str) -> str:
    """The end of a latency table's scale: its longest p95 (bars are drawn in proportion to it)."""
    rows = latency.get("partitions" if title == "partition" else "jobs") or []
    return duration(max((r["p95"] for r in rows), default=None))
