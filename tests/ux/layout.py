"""Horizontal overflow, measured in the page's DOM: what a reader at a given width cannot see.

`overflow_report(page)` walks every rendered element and reports
- `outside`: an element drawn past the viewport's left or right edge (the page scrolls sideways);
- `spills`: a block whose content is wider than its box and shows past it (overflow visible);
- `scrolls`: a box that scrolls sideways (overflow auto/scroll with content wider than the box);
- `cut`: a box that clips wider content without an ellipsis (text or ticks silently cut off);
- `truncated`: a box that cuts its one line with an ellipsis: allowed where the whole text is in the
  DOM and its tooltip (`title`), listed so a test can check that nothing important is among them.
SVG internals are skipped (a chart's shapes are laid out in its own user units)."""
from __future__ import annotations

from typing import Any

MEASURE = r"""() => {
  const vw = document.documentElement.clientWidth;
  const out = {outside: [], spills: [], scrolls: [], cut: [], truncated: [],
               page: {scrollWidth: document.documentElement.scrollWidth, clientWidth: vw}};
  const name = (el) => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += "#" + el.id;
    const cls = typeof el.className === "string" ? el.className.trim() : "";
    if (cls) s += "." + cls.split(/\s+/).join(".");
    const text = (el.textContent || "").trim().replace(/\s+/g, " ").slice(0, 40);
    return text ? s + " «" + text + "»" : s;
  };
  for (const el of document.body.querySelectorAll("*")) {
    const tag = el.tagName.toLowerCase();
    if (el.closest("svg") && tag !== "svg") continue;
    if (tag === "script" || tag === "style" || tag === "noscript" || tag === "template") continue;
    const cs = getComputedStyle(el);
    if (cs.display === "none" || cs.visibility === "hidden" || el.closest("[hidden]")) continue;
    // Text for screen readers only (a 1 px box clipped on purpose) is not meant to be seen.
    if (el.closest(".visually-hidden, .sr-only") || (cs.position === "absolute" && cs.clip !== "auto")) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.right > vw + 1 || r.left < -1) {
      out.outside.push({el: name(el), left: Math.round(r.left), right: Math.round(r.right), viewport: vw});
      continue;
    }
    if (cs.display === "inline" || tag === "svg" || el.clientWidth === 0) continue;
    if (el.scrollWidth <= el.clientWidth + 1) continue;
    const item = {el: name(el), scrollWidth: el.scrollWidth, clientWidth: el.clientWidth};
    if (cs.overflowX === "visible") out.spills.push(item);
    else if (cs.overflowX === "auto" || cs.overflowX === "scroll") out.scrolls.push(item);
    else if (cs.textOverflow === "ellipsis") out.truncated.push(Object.assign(item, {title: el.title || ""}));
    else out.cut.push(item);
  }
  return out;
}"""


def overflow_report(page: Any) -> dict[str, Any]:
    return page.evaluate(MEASURE)


def overflow_problems(page: Any) -> dict[str, list[Any]]:
    """The report's failures: everything but the truncations whose whole text is their tooltip."""
    report = overflow_report(page)
    problems = {k: report[k] for k in ("outside", "spills", "scrolls", "cut") if report[k]}
    untitled = [t for t in report["truncated"] if not t["title"]]
    if untitled:
        problems["truncated without a tooltip"] = untitled
    if report["page"]["scrollWidth"] > report["page"]["clientWidth"] + 1:
        problems["page"] = [report["page"]]
    return problems
