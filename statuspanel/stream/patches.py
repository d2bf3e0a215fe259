"""Patch frames: what changed in one engine between the frame a client holds (`base`) and a new one.

A full frame carries the whole snapshot and its rendered section; at 20 fleet sources that is a quarter
of a megabyte a second to every tab. After the first full frame a client that asked for patches
(`?patch=1`) gets only what changed:

- HTML: `{"type": "patch", "engine_id", "seq", "base", "attrs": {name: value | null},
  "regions": {data-region: outerHTML}, "lists"?: {data-region: [names]}, "counters"?: {...}}`: the
  section is a tree of regions (`data-region` elements; the body's children are regions, and so are
  a region list's, `data-region-list`): the smallest regions whose HTML changed, apart from the values
  the page ticks by itself (`mask_ticking`), the lists whose children came, went or moved (their new
  order, "" naming the body), the section's own attributes that changed (null: removed), and the
  snapshot's `counters` when they changed. A worker card, a pipeline's row and each of its cells, a
  GPU's row are regions of their own, so a partition that moves on costs a cell, not the table.
- JSON: `{"type": "patch", "engine_id", "seq", "base", "set": {key: value}, "unset": [key]}`: the
  snapshot's top-level keys whose value changed or appeared, and those that went away.

A patch applies only to the frame it was built from: the consumer sends it to a client that holds
exactly `base`, and a full frame to any other. What each frame carried is held here per
(engine, seq, format), split into regions once, in the render thread (`hold`); a patch is built once
per (engine, base -> seq, format) and shared by every client holding that base. A frame that was
degraded (over the size limit) is not held: patches never start from or lead to one, so that engine
gets full frames.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from html import unescape
from typing import Any, cast

from statuspanel.render.cache import LRU

patch_cache: LRU[str | None] = LRU(128)
parsed_snapshots: LRU[dict[str, Any] | None] = LRU(16)
BODY_CLASS = "engine-body"
VOID_TAGS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                       "source", "track", "wbr"})


@dataclass(frozen=True)
class Region:
    """One `data-region` element: its HTML, its shape (the HTML outside its child regions, with ticking
    values masked and each child a placeholder; a list's shape is its own tags), its child regions
    and a digest of all of it, so that equal regions compare in one step."""
    name: str
    source: str  # the whole section's HTML, shared by every region of it (no copies held)
    start: int
    end: int
    shape: str
    children: tuple[Region, ...]
    is_list: bool
    digest: bytes

    @property
    def html(self) -> str:
        return self.source[self.start:self.end]


@dataclass(frozen=True)
class Sections:
    """An engine section split into its region tree: the body's attributes, the body (a list of the
    top-level regions, named ""), the snapshot's counters."""
    attrs: dict[str, str | None]
    root: Region
    counters: Any


# What the browser keeps growing between frames never counts as a change (docs/SNAPSHOT.md "Ticking
# values"): an element marked `data-live-secs`, `data-updated-at` or `data-bind` has its title and
# text masked, and the values of those attributes (and `datetime`) are masked wherever they appear.
_TICKING_TAG = re.compile(r'(<[a-zA-Z][^<>]*?\b(?:data-live-secs|data-updated-at|data-bind)\b[^<>]*>)[^<]*')
_TICKING_TITLE = re.compile(r'\btitle="[^"]*"')
_TICKING_ATTR = re.compile(r'\b(data-live-secs|data-updated-at|datetime)="[^"]*"')


def mask_ticking(html: str) -> str:
    """`html` with the values the page ticks by itself blanked: what a region is compared by."""
    if "data-live-secs" not in html and "data-updated-at" not in html and "data-bind" not in html:
        return html
    html = _TICKING_TAG.sub(lambda m: _TICKING_TITLE.sub('title=""', m.group(1)), html)
    return _TICKING_ATTR.sub(r'\1=""', html)


class _Open:
    """A region being parsed: where it starts, where its start tag ends, the spans of its children."""
    __slots__ = ("name", "start", "tag_end", "depth", "is_list", "children")

    def __init__(self, name: str, start: int, tag_end: int, depth: int, is_list: bool) -> None:
        self.name, self.start, self.tag_end, self.depth, self.is_list = name, start, tag_end, depth, is_list
        self.children: list[Region] = []


# Our own templates' markup, read by a tokenizer rather than html.parser: attribute values never
# hold a raw ">" (Django escapes it), and anything unexpected (unbalanced tags, text in a list) makes
# the section unsplittable (full frames), never wrongly patched.
_TOKEN = re.compile(r"""<!--.*?-->|<(/?)([a-zA-Z][a-zA-Z0-9-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>""", re.S)
_ATTR = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?""")


def _attrs(text: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for m in _ATTR.finditer(text):
        value = next((v for v in m.group(2, 3, 4) if v is not None), None)
        out[m.group(1).lower()] = None if value is None else unescape(value)
    return out


class _Tree:
    """The region tree being read: open tags, open regions, the names seen, the body's attributes."""

    def __init__(self, html: str) -> None:
        self.html = html
        self.tags: list[str] = []
        self.stack: list[_Open] = []
        self.names: set[str] = set()
        self.attrs: dict[str, str | None] | None = None
        self.root: Region | None = None

    def in_list(self) -> bool:
        return bool(self.stack) and self.stack[-1].is_list and len(self.tags) == self.stack[-1].depth

    def start(self, tag: str, rest: str, at: int, end: int) -> bool:
        void = tag in VOID_TAGS or rest.rstrip().endswith("/")
        if not self.tags:
            if self.attrs is not None or void:
                return False  # more than one body
            self.attrs = _attrs(rest)
            self.stack.append(_Open("", at, end, 1, True))
            self.tags.append(tag)
            return True
        named = _attrs(rest) if "data-region" in rest else {}
        name = named.get("data-region")
        if self.in_list() and (name is None or void):
            return False  # a list (and the body) holds regions only
        if void:
            return True
        if name is not None:
            if not name or name in self.names:
                return False
            self.names.add(name)
            self.stack.append(_Open(name, at, end, len(self.tags) + 1, "data-region-list" in named))
        self.tags.append(tag)
        return True

    def end(self, tag: str, at: int, end: int) -> bool:
        if tag in VOID_TAGS:
            return True
        if not self.tags or self.tags[-1] != tag:
            return False
        depth = len(self.tags)
        self.tags.pop()
        if self.stack and self.stack[-1].depth == depth:
            region = _close(self.stack.pop(), self.html, at, end)
            if self.stack:
                self.stack[-1].children.append(region)
            else:
                self.root = region
        return True


def _parse(html: str) -> tuple[dict[str, str | None], Region] | None:
    """The body's attributes and region tree, or None when the markup is not what it should be."""
    tree = _Tree(html)
    at = 0
    for m in _TOKEN.finditer(html):
        if tree.in_list() and html[at:m.start()].strip():
            return None  # text in a list
        at = m.end()
        closing, tag, rest = m.group(1), m.group(2), m.group(3)
        if tag is None:
            continue  # a comment
        if tree.root is not None:
            return None  # anything after the body
        ok = tree.end(tag.lower(), m.start(), at) if closing else tree.start(tag.lower(), rest, m.start(), at)
        if not ok:
            return None
    if tree.tags or tree.attrs is None or tree.root is None:
        return None
    return tree.attrs, tree.root


def _close(item: _Open, html: str, end_tag_start: int, end: int) -> Region:
    """The region `item` once its end tag is read: its shape and digest from its children's."""
    if item.is_list:
        shape = html[item.start:item.tag_end] + html[end_tag_start:end]
    else:
        pieces, at = [], item.start
        for child in item.children:
            pieces += [html[at:child.start], f"\x00{child.name}\x00"]
            at = child.end
        pieces.append(html[at:end])
        shape = "".join(pieces)
    shape = mask_ticking(shape) if item.name else ""  # the body's own tag is its `attrs`
    digest = hashlib.blake2b(shape.encode(), digest_size=16)
    for child in item.children:
        digest.update(child.digest)
    return Region(item.name, html, item.start, end, shape, tuple(item.children), item.is_list, digest.digest())


def split_sections(html: str, counters: Any = None) -> Sections | None:
    """The section's region tree, or None when it cannot be split safely (then full frames are sent):
    not one `.engine-body`, unbalanced tags, a region name missing or used twice, or a list (the body
    included) holding anything but regions."""
    parsed = _parse(html)
    if parsed is None:
        return None
    attrs, root = parsed
    if BODY_CLASS not in (attrs.get("class") or "").split():
        return None
    return Sections(attrs, root, counters)
# A client more than HELD_PER_ENGINE frames of an engine behind gets that engine's whole frame.
HELD_PER_ENGINE = 4
HELD_ENGINES = 1024
# Keyed ((engine, with_html), seq): bounded per engine and format, not by one window over all engines
# (with a fleet polled in turn, a shared window of K frames held each engine's previous frame only
# while the fleet stayed under K/2 engines, and a client one poll behind got a whole frame).
held: LRU[Sections | str] = LRU(2 * HELD_ENGINES * HELD_PER_ENGINE, per_engine=HELD_PER_ENGINE)


def hold(engine_id: str, seq: Any, with_html: bool, content: Sections | str | None) -> None:
    """Remember what the frame of (engine, seq) carried (Sections, or the snapshot's JSON text)."""
    if isinstance(seq, int) and content is not None:
        held.get_or_build(((engine_id, with_html), seq), lambda: content)


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


def _diff(old: Region, new: Region, regions: dict[str, str], lists: dict[str, list[str]]) -> None:
    """What turns `old` into `new`: regions sent whole (`regions`) and lists reordered (`lists`).

    A region whose shape changed is sent whole; otherwise only its children that changed. A list's
    children may come, go and move: its new order is sent when it changed, with each new child whole."""
    if old.digest == new.digest:
        return
    if old.shape != new.shape or old.is_list != new.is_list:
        regions[new.name] = new.html
        return
    if not new.is_list:  # equal shapes: the same children in the same order
        for old_child, new_child in zip(old.children, new.children):
            _diff(old_child, new_child, regions, lists)
        return
    names = [child.name for child in new.children]
    if names != [child.name for child in old.children]:
        lists[new.name] = names
    before = {child.name: child for child in old.children}
    for child in new.children:
        was = before.get(child.name)
        if was is None:
            regions[child.name] = child.html
        else:
            _diff(was, child, regions, lists)


def _html_patch(engine_id: str, base: int, seq: int, old: Sections, new: Sections) -> str:
    regions: dict[str, str] = {}
    lists: dict[str, list[str]] = {}
    _diff(old.root, new.root, regions, lists)
    attrs = {k: v for k, v in new.attrs.items() if old.attrs.get(k, ...) != v}
    attrs.update({k: None for k in old.attrs if k not in new.attrs})
    frame: dict[str, Any] = {**_head(engine_id, seq, base), "attrs": attrs, "regions": regions}
    if lists:
        frame["lists"] = lists
    if new.counters != old.counters:
        frame["counters"] = new.counters
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False)  # "·" is 2 bytes, not 6


def _json_patch(engine_id: str, base: int, seq: int, old: dict[str, Any], new: dict[str, Any]) -> str:
    changed = {k: v for k, v in new.items() if k not in old or old[k] != v}
    gone = [k for k in old if k not in new]
    frame = {**_head(engine_id, seq, base), "set": changed, "unset": gone}
    return json.dumps(frame, separators=(",", ":"))


def patch_frame(engine_id: str, base: int, seq: int, with_html: bool) -> str | None:
    """The patch from `base` to `seq`, or None: send the full frame.

    Built once per (engine, base -> seq, format) and shared by every client holding `base`."""
    old, new = held.get(((engine_id, with_html), base)), held.get(((engine_id, with_html), seq))
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
