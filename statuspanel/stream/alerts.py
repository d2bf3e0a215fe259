"""The alerts frame: the whole set of firing alerts, for clients of `/ws/status/` that ask (`alerts=1`).

`{"type": "alerts", "seq", "server_time", "alerts": [...], "html"}`: `alerts` is what
`GET /api/alerts` answers (firing, newest first, each with its acknowledge and silence state);
`html` is the panel's strip (templates/statuspanel/alerts/_strip_body.html), left out for
`?format=json`. A frame carries the whole set, never a change: a client applies the newest by `seq`
and drops older ones. Both forms are encoded once per change per process and shared by every client.

The group message that carries it between the process's alert stream and its consumers is
`{"type": "status.alerts", "seq", "json", "html"}`: the two frames already encoded.
"""
from __future__ import annotations

import json
import time
from typing import Any

from django.template.loader import render_to_string

FRAME_TYPE = "alerts"
MESSAGE_TYPE = "status.alerts"
STRIP_BODY_TEMPLATE = "statuspanel/alerts/_strip_body.html"


def strip_context(alerts: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """What the strip's template needs: the alerts with their times as unix seconds, silences judged at `now`."""
    from datetime import datetime

    def unix(value: str | None) -> float | None:
        return datetime.fromisoformat(value).timestamp() if value else None

    items = []
    for alert in alerts:
        since = unix(alert.get("fired_at")) or unix(alert.get("started_at")) or now
        until = unix(alert.get("silenced_until"))
        items.append({**alert, "since": since, "age_secs": max(0.0, now - since),
                      "silenced_until_unix": until, "silenced": until is not None and until > now,
                      "acknowledged_at_unix": unix(alert.get("acknowledged_at"))})
    return {"alerts": items, "now": now}


def render_strip_body(alerts: list[dict[str, Any]], now: float) -> str:
    return render_to_string(STRIP_BODY_TEMPLATE, strip_context(alerts, now))


def _encode(alerts: list[dict[str, Any]], seq: int, now: float, omitted: int) -> tuple[str, str]:
    head = {"type": FRAME_TYPE, "seq": seq, "server_time": round(now, 3), "alerts": alerts}
    if omitted:
        head["omitted"] = omitted
    as_json = json.dumps(head, separators=(",", ":"))
    body = render_strip_body(alerts, now)
    if omitted:
        body += f'<p class="alerts-omitted" data-alerts-omitted="{omitted}">and {omitted} more: see /api/alerts</p>'
    return as_json, as_json[:-1] + ',"html":' + json.dumps(body) + "}"


def encode_frames(alerts: list[dict[str, Any]], seq: int, now: float | None = None) -> tuple[str, str]:
    """The JSON-format frame and the HTML-format frame for this set of alerts (in that order).

    Never over the server's frame limit (settings.WS_MAX_FRAME_BYTES): with too many alerts the
    newest that fit are sent and `omitted` counts the rest (all of them are in `GET /api/alerts`)."""
    from statuspanel.stream.frames import frame_limit, frame_size

    now = time.time() if now is None else now
    keep, limit = len(alerts), frame_limit()
    while True:
        frames = _encode(alerts[:keep], seq, now, len(alerts) - keep)
        if keep == 0 or max(frame_size(f) for f in frames) <= limit:
            return frames
        keep //= 2


def group_message(seq: int, frames: tuple[str, str]) -> dict[str, Any]:
    return {"type": MESSAGE_TYPE, "seq": seq, "json": frames[0], "html": frames[1]}
