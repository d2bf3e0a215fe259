"""Patch frames: what changed in one engine between the frame a client holds (`base`) and a new one.

A full frame carries the whole snapshot and its rendered section; at 20 fleet sources that is a quarter
of a megabyte a second to every tab. After the first full frame a client that asked for patches
(`?patch=1`) gets only what changed:

- HTML: `{"type": "patch", "engine_id", "seq", "base", "attrs": {name: value | null},
  "regions": {data-region: outerHTML}, "counters"?: {...}}`: the engine section's top-level regions
  (each a `data-region` element of `.engine-body`) whose rendered HTML changed, the section's own
  attributes that changed (null: removed), and the snapshot's `counters` when they changed.
- JSON: `{"type": "patch", "engine_id", "seq", "base", "set": {key: value}, "unset": [key]}`: the
  snapshot's top-level keys whose value changed or appeared, and those that went away.

A patch applies only to the frame it was built from: the consumer sends it to a client that holds
exactly `base`, and a full frame to any other. What each frame carried is held here per
(engine, seq, format), split into regions once, in the render thread (`hold`); a patch is built once
per (engine, base -> seq, format) and shared by every client holding that base. A frame that was
degraded (over the size limit) is not held: patches never start from or lead to one, so that engine
gets full frames. A section whose region list changed (a region appeared or went away) gets a full
frame too.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any, cast

from statuspanel.render.cache import LRU

# A client further behind than this gets a whole frame: held sections and parsed snapshots cost memory
# the server's slow-client bound counts on (bench/slow_clients.py), so the window is short.
HELD_FRAMES = 64
held: LRU[Sections | str] = LRU(HELD_FRAMES)  # (engine, seq, with_html) -> Sections | snapshot JSON text
patch_cache: LRU[str | None] = LRU(128)
parsed_snapshots: LRU[dict[str, Any] | None] = LRU(16)
BODY_CLASS = "engine-body"
VOID_TAGS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                       "source", "track", "wbr"})


@dataclass(frozen=True)
class Sections:
    """An engine section split at its regions: the body's attributes, region names in order, their HTML."""
    attrs: dict[str, str | None]
    order: tuple[str, ...]
    regions: dict[str, str]
    counters: Any


class _RegionSplitter(HTMLParser):
    """Finds `.engine-body`'s attributes and the source span of each top-level child element."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.html = html
        self.line_starts = [0]
        for i, ch in enumerate(html):
            if ch == "\n":
                self.line_starts.append(i + 1)
        self.depth = 0
        self.attrs: dict[str, str | None] | None = None
        self.spans: list[tuple[str | None, int, int]] = []
        self.opened: tuple[str | None, int] | None = None
        self.bad = False

    def _offset(self) -> int:
        line, col = self.getpos()
        return self.line_starts[line - 1] + col

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID_TAGS:
            if self.depth == 1:
                self.bad = True  # a top-level element that is no region
            return
        if self.depth == 0:
            if self.attrs is not None:
                self.bad = True
            self.attrs = dict(attrs)
        elif self.depth == 1:
            self.opened = (dict(attrs).get("data-region"), self._offset())
        self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID_TAGS:
            return
        self.depth -= 1
        if self.depth == 1 and self.opened is not None:
            end = self.html.index(">", self._offset()) + 1
            self.spans.append((self.opened[0], self.opened[1], end))
            self.opened = None
        elif self.depth < 0:
            self.bad = True


def split_sections(html: str, counters: Any = None) -> Sections | None:
    """The section's regions, or None when it cannot be split safely (then full frames are sent)."""
    splitter = _RegionSplitter(html)
    try:
        splitter.feed(html)
        splitter.close()
    except (ValueError, AssertionError):
        return None
    attrs = splitter.attrs
    if splitter.bad or splitter.depth != 0 or attrs is None or BODY_CLASS not in (attrs.get("class") or "").split():
        return None
    names = [name for name, _s, _e in splitter.spans]
    if any(not name for name in names) or len(set(names)) != len(names):
        return None
    regions = {name: html[start:end] for name, start, end in splitter.spans if name}
    return Sections(attrs, tuple(regions), regions, counters)


def hold(engine_id: str, seq: Any, with_html: bool, content: Sections | str | None) -> None:
    """Remember what the frame of (engine, seq) carried (Sections, or the snapshot's JSON text)."""
    if isinstance(seq, int) and content is not None:
        held.get_or_build((engine_id, seq, with_html), lambda: content)


def holds(engine_id: str, seq: int, with_html: bool) -> bool:
    return held.get((engine_id, seq, with_html)) is not None


def _snapshot(engine_id: str, seq: int, text: str) -> dict[str, Any] | None:
    def parse() -> dict[str, Any] | None:
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return parsed_snapshots.get_or_build((engine_id, seq), parse)


def _head(engine_id: str, seq: int, base: int) -> dict[str, Any]:
    return {"type": "patch", "engine_id": engine_id, "seq": seq, "base": base}


def _html_patch(engine_id: str, base: int, seq: int, old: Sections, new: Sections) -> str | None:
    if old.order != new.order:
        return None
    regions = {n: new.regions[n] for n in new.order if old.regions[n] != new.regions[n]}
    attrs = {k: v for k, v in new.attrs.items() if old.attrs.get(k, ...) != v}
    attrs.update({k: None for k in old.attrs if k not in new.attrs})
    frame = {**_head(engine_id, seq, base), "attrs": attrs, "regions": regions}
    if new.counters != old.counters:
        frame["counters"] = new.counters
    return json.dumps(frame, separators=(",", ":"))


def _json_patch(engine_id: str, base: int, seq: int, old: dict[str, Any], new: dict[str, Any]) -> str:
    changed = {k: v for k, v in new.items() if k not in old or old[k] != v}
    gone = [k for k in old if k not in new]
    frame = {**_head(engine_id, seq, base), "set": changed, "unset": gone}
    return json.dumps(frame, separators=(",", ":"))


def patch_frame(engine_id: str, base: int, seq: int, with_html: bool) -> str | None:
    """The patch from `base` to `seq`, or None: send the full frame.

    Built once per (engine, base -> seq, format) and shared by every client holding `base`."""
    old, new = held.get((engine_id, base, with_html)), held.get((engine_id, seq, with_html))
    if old is None or new is None or base >= seq:
        return None

    # `hold` keys by with_html: Sections were held for HTML frames, the snapshot's JSON text for the others
    def build() -> str | None:
        if with_html:
            return _html_patch(engine_id, base, seq, cast(Sections, old), cast(Sections, new))
        old_snap, new_snap = _snapshot(engine_id, base, cast(str, old)), _snapshot(engine_id, seq, cast(str, new))
        if old_snap is None or new_snap is None:
            return None
        return _json_patch(engine_id, base, seq, old_snap, new_snap)

    return patch_cache.get_or_build((engine_id, base, seq, with_html), build)


def clear() -> None:
    for cache in (held, patch_cache, parsed_snapshots):
        cache.clear()
