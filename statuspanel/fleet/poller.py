"""One source's polling: its state (online / stale / unreachable / malformed), backoff and snapshot.

`SourceState` is what the panel learns about a source; it survives an edit of the source (a new
client, the same history). `decode` turns an answer's bytes into the panel's snapshot (UTF-8 text,
JSON depth cap, the per-source bounds, then the kind's adapter); large answers are decoded in a
worker thread, off the event loop.
"""
from __future__ import annotations

import json
import random
import time
from datetime import datetime, timezone
from typing import Any, Callable, Literal
from urllib.parse import urlsplit, urlunsplit

from gpu_engine.schema import SourceSnapshot
from statuspanel.fleet.bounds import SourceLimits, check_bounds, utf8_text
from statuspanel.fleet.cuzk import adapt_cuzk
from statuspanel.fleet.cuzk_grpc.channel import public_grpc_target
from statuspanel.fleet.shape import Malformed, nesting_depth
from statuspanel.fleet.transport import SourceConfig
from statuspanel.fleet.vocabulary import SOURCE_ONLINE, SOURCE_STALE, STALE_INTERVALS

MAX_DEPTH = 64
# Backoff while failing: the delay doubles from one interval up to this many intervals (at most 30 s),
# each drawn between half and all of it so that many sources failing together do not retry together.
BACKOFF_MAX_INTERVALS = 8
BACKOFF_MAX_SECS = 30.0


def decode(body: bytes, kind: str, max_depth: int = MAX_DEPTH, limits: SourceLimits | None = None) -> SourceSnapshot:
    """The panel snapshot in `body` (a cuzk or a vastmanager status document), or Malformed.

    The depth is measured on UTF-8 text (any other encoding is refused first: UTF-16 bytes hide
    brackets from a byte scanner) and the counts checked before the adapter does any work."""
    text = utf8_text(body)
    raw = body[3:] if body.startswith(b"\xef\xbb\xbf") else body  # the same text: ASCII bytes are ASCII chars
    if nesting_depth(raw) > max_depth:  # before parsing: the parser's recursion must stay shallow
        raise Malformed(f"too deep: the JSON nests over {max_depth} levels", reason="too-deep")
    try:
        doc = json.loads(text)
    except RecursionError:
        raise Malformed(f"too deep: the JSON nests over {max_depth} levels", reason="too-deep") from None
    except ValueError as exc:
        head = text.lstrip()[:1]
        what = "HTML or XML" if head == "<" else "not JSON"
        raise Malformed(f"not JSON: the answer is {what} ({str(exc)[:120]})", reason="not-json") from None
    check_bounds(doc, limits or SourceLimits())
    snap = adapt_cuzk(doc)  # our own snapshot is a superset of cuzk's: one rule set reads both
    if kind == "vastmanager":
        extras: tuple[Literal["allocations", "buffers"], ...] = ("allocations", "buffers")
        for extra in extras:
            if not snap[extra] or snap[extra] == {"srs": [], "pce": []}:
                del snap[extra]
        remote_id = doc.get("engine_id")
        snap["remote_engine_id"] = remote_id if isinstance(remote_id, str) else None
    return snap


def backoff_delay(cfg: SourceConfig, failures: int, rng: Callable[[], float] = random.random) -> float:
    """Seconds before the next try after `failures` failures in a row (jittered exponential)."""
    cap = min(BACKOFF_MAX_SECS, BACKOFF_MAX_INTERVALS * cfg.interval_secs)
    base = min(cap, cfg.interval_secs * 2.0 ** max(0, failures - 1))
    return base * (0.5 + 0.5 * rng())


def public_target(cfg: SourceConfig) -> str:
    """Where the source is polled, for the panel: no query string (it could hold a key), no userinfo."""
    if not cfg.has_http:  # a cuzk source polled over gRPC only
        return public_grpc_target(cfg)
    if cfg.transport == "ssh":
        return f"ssh {cfg.ssh_user}@{cfg.ssh_host}:{cfg.ssh_port} -> 127.0.0.1:{cfg.remote_port}"
    parts = urlsplit(cfg.status_url())
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class SourceState:
    """What is known of one source; `observe_*` record a poll's outcome, `current` classifies it now."""

    def __init__(self, cfg: SourceConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.cfg = cfg
        self.clock = clock
        self.created = clock()
        self.data: SourceSnapshot | None = None   # the last good snapshot
        self.last_ok: float | None = None
        self.failure: tuple[str, str, str] | None = None   # (state, reason, error) of the last poll
        self.failures = 0
        self.polls = 0
        self.poll_ms: float | None = None
        self.published_state: tuple[str, str] | None = None
        self.last_publish = -1e18
        self.seq = int(time.time() * 1000)

    def due(self, now: float) -> bool:
        """Whether to republish now: its state moved or its heartbeat is due. Before the first
        answer, only once a whole interval has passed (a source that hangs from the start shows)."""
        if self.polls == 0 and now - self.created < self.cfg.interval_secs:
            return False
        return self.current()[:2] != self.published_state or now - self.last_publish >= heartbeat_secs(self.cfg)

    def observe_ok(self, snap: SourceSnapshot, poll_ms: float) -> None:
        self.data, self.last_ok, self.failure = snap, self.clock(), None
        self.failures = 0
        self.polls += 1
        self.poll_ms = round(poll_ms, 1)

    def observe_failure(self, state: str, reason: str, error: str, poll_ms: float) -> None:
        self.failure = (state, reason, error)
        self.failures += 1
        self.polls += 1
        self.poll_ms = round(poll_ms, 1)

    def current(self) -> tuple[str, str, str | None]:
        """(state, reason, error) now: the last failure, else stale past 2 intervals, else online."""
        if self.failure is not None:
            return self.failure
        if self.last_ok is None:
            return SOURCE_STALE, "waiting", "no answer yet"
        age = self.clock() - self.last_ok
        if age > STALE_INTERVALS * self.cfg.interval_secs:
            return SOURCE_STALE, "stale", f"stale: no fresh snapshot for {age:.1f} s"
        return SOURCE_ONLINE, "", None

    def source_block(self) -> dict[str, Any]:
        state, reason, error = self.current()
        cfg = self.cfg
        return {
            "kind": cfg.kind,
            "transport": cfg.transport,
            "state": state,
            "error": error,
            "last_ok_secs_ago": None if self.last_ok is None else round(self.clock() - self.last_ok, 3),
            "poll_ms": self.poll_ms,
            "reason": reason or None,
            "interval_secs": cfg.interval_secs,
            "failures": self.failures,
            "target": public_target(cfg),
            **(_grpc_block(cfg) if cfg.grpc_target else {}),
        }

    def snapshot(self) -> SourceSnapshot:
        """The engine snapshot to publish now: the last good data (if any) with the source's state."""
        snap = self.data.copy() if self.data is not None else _empty_snapshot()
        self.seq += 1
        now = time.time()
        snap["engine_id"] = self.cfg.name
        snap["seq"] = self.seq
        snap["generated_at"] = datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="milliseconds")
        snap["published_at"] = now
        snap["heartbeat_secs"] = heartbeat_secs(self.cfg)
        snap["source"] = self.source_block()
        snap.setdefault("consistency", [])
        return snap


def _grpc_block(cfg: SourceConfig) -> dict[str, Any]:
    """A cuzk source with a gRPC target: where it is called, and whether the HTTP status is polled too."""
    return {"grpc_target": public_grpc_target(cfg), "status_http": cfg.has_http}


def heartbeat_secs(cfg: SourceConfig) -> float:
    """A source's snapshot is republished at least this often (its cache TTL is two of these)."""
    return max(cfg.interval_secs, 1.0)


def _empty_snapshot() -> SourceSnapshot:
    """No answer yet: nothing to show (`engine_id`, `seq` and `generated_at` are stamped by `snapshot`)."""
    return {"engine_id": None, "seq": 0, "generated_at": "", "uptime_secs": None, "backend": None,
            "memory": {"total_bytes": 0, "used_bytes": 0, "available_bytes": 0},
            "synthesis": {"max_concurrent": 0, "active": 0}, "pipelines": [], "gpu_workers": [], "gpus": [],
            "counters": {"total_completed": 0, "total_failed": 0, "total_cancelled": 0, "completed_by_kind": {},
                         "failed_by_kind": {}, "queue_depth": 0},
            "consistency": []}

