"""What a source's answer may hold, decided at the door: before the adapter, the render or a metric
sees it.

A status document within the byte cap can still be huge in what costs: a valid 5 MB document of
50,000 workers swamped the adapter, every render and `/metrics`. So a parsed document is counted
first (list lengths only: no walk over the entries) and refused as `malformed` / `too-large` with
the cap named when it holds more workers, pipelines, partitions (all pipelines together) or other
listed entries than `SourceLimits` allows; the caps are settings (docs/FLEET.md). The text is
pinned to UTF-8 (JSON's interchange encoding): `json.loads` would also read UTF-16/32, whose bytes
hide brackets and quotes from the byte-level depth guard.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from statuspanel.fleet.shape import Malformed

# Allocations per pool, GPUs and named counters (buffers, completed/failed by kind) are held to this.
MAX_ENTRIES = 1024


@dataclass(frozen=True)
class SourceLimits:
    """Caps on one source's document (FLEET_MAX_WORKERS, FLEET_MAX_PIPELINES, FLEET_MAX_PARTITIONS)."""

    workers: int = 512
    pipelines: int = 256
    partitions: int = 4096
    entries: int = MAX_ENTRIES

    @classmethod
    def from_settings(cls) -> SourceLimits:
        from django.conf import settings

        return cls(workers=int(getattr(settings, "FLEET_MAX_WORKERS", cls.workers)),
                   pipelines=int(getattr(settings, "FLEET_MAX_PIPELINES", cls.pipelines)),
                   partitions=int(getattr(settings, "FLEET_MAX_PARTITIONS", cls.partitions)))


def utf8_text(body: bytes) -> str:
    """The answer as text: UTF-8 (a leading byte-order mark is dropped), else `malformed`. A NUL
    byte never occurs in a UTF-8 JSON text (control characters in strings are escaped), but in
    every UTF-16/32 one, which may otherwise pass for UTF-8."""
    if b"\x00" in body:
        raise Malformed("not JSON: the answer is UTF-16/32 or binary (it holds NUL bytes); "
                        "a status document must be UTF-8", reason="not-json")
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Malformed(f"not JSON: the answer is not UTF-8 ({exc.reason} at byte {exc.start}); "
                        "a status document must be UTF-8", reason="not-json") from None


def _length(value: Any) -> int:
    return len(value) if isinstance(value, (list, dict)) else 0


def _too_large(count: int, what: str, cap: int, setting: str | None) -> Malformed:
    named = f" ({setting})" if setting else ""
    return Malformed(f"too large: {count} {what}, over the cap of {cap}{named}", reason="too-large", field=what)


def check_bounds(doc: Any, limits: SourceLimits) -> None:
    """Refuse a parsed document that holds more than `limits` allows (Malformed, `too-large`)."""
    if not isinstance(doc, dict):
        return  # the adapter names what is wrong with it
    workers = _length(doc.get("gpu_workers"))
    if workers > limits.workers:
        raise _too_large(workers, "workers", limits.workers, "FLEET_MAX_WORKERS")
    pipelines = doc.get("pipelines")
    if _length(pipelines) > limits.pipelines:
        raise _too_large(_length(pipelines), "pipelines", limits.pipelines, "FLEET_MAX_PIPELINES")
    if isinstance(pipelines, list):
        partitions = sum(_length(p.get("partitions")) for p in pipelines if isinstance(p, dict))
        if partitions > limits.partitions:
            raise _too_large(partitions, "partitions", limits.partitions, "FLEET_MAX_PARTITIONS")
    raw_counters, raw_allocations = doc.get("counters"), doc.get("allocations")
    counters: dict[str, Any] = raw_counters if isinstance(raw_counters, dict) else {}
    allocations: dict[str, Any] = raw_allocations if isinstance(raw_allocations, dict) else {}
    others = {"gpus": doc.get("gpus"), "buffers": doc.get("buffers"),
              "counters.completed_by_kind": counters.get("completed_by_kind"),
              "counters.failed_by_kind": counters.get("failed_by_kind"),
              "allocations.srs": allocations.get("srs"), "allocations.pce": allocations.get("pce")}
    for what, value in others.items():
        if _length(value) > limits.entries:
            raise _too_large(_length(value), f"entries in {what}", limits.entries, None)
