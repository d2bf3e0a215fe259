"""Plain helpers of the history tests: the bars of a rendered timeline, read back from its SVG."""
from __future__ import annotations

from html.parser import HTMLParser


class _Rects(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rects: list[dict[str, str]] = []
        self._open: dict[str, str] | None = None
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        if tag == "rect":
            self._open = dict(attrs, title="")
            self.rects.append(self._open)
        elif tag == "title" and self._open is not None:
            self._in_title = True

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        elif tag == "rect":
            self._open = None

    def handle_data(self, data):
        if self._in_title and self._open is not None:
            self._open["title"] += data


def timeline_rects(html: str, cls: str = "tl-bar") -> list[dict[str, str]]:
    """Every <rect> of the timeline whose class names include `cls`, with its attributes and tooltip."""
    parser = _Rects()
    parser.feed(html)
    return [r for r in parser.rects if cls in (r.get("class") or "").split()]
