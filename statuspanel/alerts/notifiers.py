"""One message to one notifier: the webhook JSON body, the Slack body, the email; and sending it once.

Sending is bounded: a connect/read timeout, a whole-send deadline, and at most `MAX_RESPONSE_BYTES`
of a receiver's answer read (a receiver that sends 100 MB back costs 64 KiB). Errors come back as an
`Outcome`, never raised, and never contain the URL (it may carry a token) or the secret.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from statuspanel.alerts.models import EMAIL, WEBHOOK

SIGNATURE_HEADER = "X-Vastmanager-Signature"
MAX_RESPONSE_BYTES = 64 * 1024
BODY_VERSION = 1
SLACK_MAX_BLOCKS = 40


@dataclass(frozen=True)
class Outcome:
    ok: bool
    status: int | None
    error: str
    duration_ms: float


def webhook_body(notifier_name: str, alerts: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """The documented JSON body (docs/ALERTS.md): a list `alerts`, each with rule, state, engine,
    subject, severity, message, value, started_at, fired_at, resolved_at."""
    firing = sum(1 for a in alerts if a["state"] == "firing")
    return {"version": BODY_VERSION, "notifier": notifier_name, "sent_at": _iso(now),
            "firing": firing, "resolved": len(alerts) - firing, "alerts": alerts}


def summary(alerts: list[dict[str, Any]]) -> str:
    firing = [a for a in alerts if a["state"] == "firing"]
    resolved = len(alerts) - len(firing)
    parts = []
    if firing:
        rules = sorted({a["rule"] for a in firing})
        parts.append(f"{len(firing)} firing ({', '.join(rules)})")
    if resolved:
        parts.append(f"{resolved} resolved")
    return "vastmanager alerts: " + "; ".join(parts) if parts else "vastmanager alerts"


def slack_body(alerts: list[dict[str, Any]]) -> dict[str, Any]:
    """A Slack incoming-webhook message: `text` (the notification's line) and one block per alert."""
    text = summary(alerts)
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": f"*{text}*"}}]
    shown = alerts[: SLACK_MAX_BLOCKS - 2]
    for a in shown:
        mark = ":red_circle:" if a["state"] == "firing" else ":large_green_circle:"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text":
                       f"{mark} *{a['rule']}* `{a['engine']}` {a['state']}\n{a['message']}"}})
    if len(alerts) > len(shown):
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn",
                                                        "text": f"and {len(alerts) - len(shown)} more"}]})
    return {"text": text, "blocks": blocks}


def email_text(alerts: list[dict[str, Any]]) -> str:
    lines = [summary(alerts), ""]
    for a in alerts:
        when = a["resolved_at"] if a["state"] == "resolved" else a["started_at"]
        lines.append(f"[{a['state'].upper()}] {a['rule']} on {a['engine']} ({a['subject']}) since {when}")
        lines.append(f"    {a['message']}")
    return "\n".join(lines) + "\n"


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def send(kind: str, url: str, secret: str, recipients: list[str], notifier_name: str,
         alerts: list[dict[str, Any]], now: float | None = None) -> Outcome:
    """Send one message once; what happened comes back (never raises)."""
    started = time.monotonic()
    try:
        if kind == EMAIL:
            return _send_email(recipients, alerts, started)
        body = webhook_body(notifier_name, alerts, now or time.time()) if kind == WEBHOOK else slack_body(alerts)
        raw = json.dumps(body, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json", "User-Agent": "vastmanager-alerts"}
        if kind == WEBHOOK and secret:
            headers[SIGNATURE_HEADER] = signature(secret, raw)
        return _post(url, raw, headers, started)
    except Exception as exc:  # noqa: BLE001 - a bug here is a failed attempt, never a dead delivery thread
        return Outcome(False, None, f"{type(exc).__name__}: {_clean(str(exc), url, secret)}", _ms(started))


def _post(url: str, raw: bytes, headers: dict[str, str], started: float) -> Outcome:
    import httpx

    timeout = float(getattr(settings, "ALERTS_DELIVERY_TIMEOUT_SECS", 10.0))
    deadline = started + timeout
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)), follow_redirects=False,
                          trust_env=False) as client:
            with client.stream("POST", url, content=raw, headers=headers) as response:
                read = 0
                for chunk in response.iter_raw():
                    read += len(chunk)
                    if read >= MAX_RESPONSE_BYTES or time.monotonic() > deadline:
                        break  # the answer's body says nothing we need: stop reading it
                status = response.status_code
    except httpx.TimeoutException:
        return Outcome(False, None, f"timeout: no answer within {timeout:g} s", _ms(started))
    except httpx.ConnectError as exc:
        return Outcome(False, None, f"cannot connect: {_reason(exc)}", _ms(started))
    except httpx.HTTPError as exc:
        return Outcome(False, None, f"{type(exc).__name__}: {_reason(exc)}", _ms(started))
    if 200 <= status < 300:
        return Outcome(True, status, "", _ms(started))
    return Outcome(False, status, f"HTTP {status}", _ms(started))


def _send_email(recipients: list[str], alerts: list[dict[str, Any]], started: float) -> Outcome:
    from django.core.mail import EmailMessage, get_connection

    timeout = float(getattr(settings, "ALERTS_DELIVERY_TIMEOUT_SECS", 10.0))
    connection = get_connection(timeout=timeout) if _is_smtp() else get_connection()
    message = EmailMessage(subject=summary(alerts)[:200], body=email_text(alerts),
                           from_email=getattr(settings, "ALERTS_EMAIL_FROM", None) or settings.DEFAULT_FROM_EMAIL,
                           to=list(recipients), connection=connection)
    try:
        sent = message.send(fail_silently=False)
    except Exception as exc:  # noqa: BLE001 - SMTP refusals, timeouts, DNS, a bad backend: a failed attempt
        password = getattr(settings, "EMAIL_HOST_PASSWORD", "") or ""
        return Outcome(False, None, f"{type(exc).__name__}: {_clean(str(exc), password, '')}", _ms(started))
    return Outcome(sent == 1, 250 if sent else None, "" if sent else "no message sent", _ms(started))


def _is_smtp() -> bool:
    return settings.EMAIL_BACKEND.endswith("smtp.EmailBackend")


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text.split(" for url ")[0][:200]


def _clean(text: str, *secrets: str) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text[:300]


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000.0


def _iso(ts: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ts, timezone.utc).isoformat()
