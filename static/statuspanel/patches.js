// Patch frames for the live panel (statuspanel/stream/patches.py builds them; docs/SNAPSHOT.md
// "Patch frames" describes them). An engine section is a tree of regions (`data-region`, names unique
// in the section); a patch names the regions to replace whole (`regions`: name -> outerHTML) and the
// region lists whose children came, went or moved (`lists`: name -> names in order; "" is the body),
// plus the section's attributes that changed. A patch applies to the frame it was built from
// (`base`); anything else is a gap, and the caller asks for a resync.
(function () {
  "use strict";

  function find(body, name) {
    return name === "" ? body : body.querySelector('[data-region="' + CSS.escape(name) + '"]');
  }

  function parse(html, name) {
    const tpl = document.createElement("template");
    tpl.innerHTML = html;
    const el = tpl.content.firstElementChild;
    return el && el.dataset.region === name ? el : null;
  }

  // Applies `frame` to the section's body; `inserted(el)` is called for every element put in (the
  // caller anchors its live durations). False when the body lacks a region the patch names, or a
  // region's HTML is not that region (the caller resyncs): nothing is changed then.
  function apply(body, frame, inserted) {
    const regions = frame.regions || {}, lists = frame.lists || {};
    const fresh = new Map(); // name -> parsed element, for every region the patch carries
    for (const name of Object.keys(regions)) {
      const el = parse(regions[name], name);
      if (!el) return false;
      fresh.set(name, el);
    }
    // Resolve everything before changing anything: a patch that cannot apply leaves the page as it was.
    const reorders = [];
    for (const name of Object.keys(lists)) {
      const list = find(body, name);
      if (!list) return false;
      const children = new Map();
      for (const child of list.children) children.set(child.dataset.region, child);
      const order = [];
      for (const child of lists[name]) {
        const el = fresh.get(child) || children.get(child);
        if (!el) return false;
        order.push(el);
      }
      reorders.push([list, order]);
    }
    const placed = new Set();
    reorders.forEach(function (r) { r[1].forEach(function (el) { placed.add(el); }); });
    const replaced = [];
    for (const [name, el] of fresh) {
      if (placed.has(el)) continue; // a new child of a list: put in by its list's order
      const old = find(body, name);
      if (!old || old === body) return false;
      replaced.push([old, el]);
    }
    replaced.forEach(function (r) { r[0].replaceWith(r[1]); inserted(r[1]); });
    reorders.forEach(function (r) {
      const list = r[0], order = r[1], keep = new Set(order);
      Array.from(list.children).forEach(function (child) { if (!keep.has(child)) child.remove(); });
      order.forEach(function (el, i) {
        if (list.children[i] !== el) list.insertBefore(el, list.children[i] || null);
        if (fresh.get(el.dataset.region) === el) inserted(el);
      });
    });
    const attrs = frame.attrs || {};
    Object.keys(attrs).forEach(function (name) {
      if (attrs[name] === null) body.removeAttribute(name); else body.setAttribute(name, attrs[name]);
    });
    return true;
  }

  window.vastmanagerPatches = { apply: apply };
})();
