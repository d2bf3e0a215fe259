// Patch frames for the live panel (statuspanel/stream/patches.py builds them; docs/SNAPSHOT.md
// "On the wire" describes them): after an engine's full frame the server sends only the regions of
// its section whose HTML changed and the section's attributes that changed. A patch applies to the
// frame it was built from (`base`); anything else is a gap, and the caller asks for a resync.
(function () {
  "use strict";

  function regionOf(body, name) {
    for (const child of body.children) {
      if (child.dataset.region === name) return child;
    }
    return null;
  }

  // Applies `frame` to the section's body; `regions` (name -> outerHTML, the caller's record of what
  // is shown) is kept in step. False when the body lacks a region the patch names (the caller
  // resyncs): nothing is changed then.
  function apply(body, frame, regions) {
    const names = Object.keys(frame.regions || {});
    const olds = names.map(function (name) { return regionOf(body, name); });
    if (olds.some(function (el) { return el === null; })) return false;
    names.forEach(function (name, i) {
      const tpl = document.createElement("template");
      tpl.innerHTML = frame.regions[name];
      const el = tpl.content.firstElementChild;
      if (!el) return;
      olds[i].replaceWith(el);
      regions.set(name, el.outerHTML);
    });
    const attrs = frame.attrs || {};
    Object.keys(attrs).forEach(function (name) {
      if (attrs[name] === null) body.removeAttribute(name); else body.setAttribute(name, attrs[name]);
    });
    return true;
  }

  window.vastmanagerPatches = { apply: apply };
})();
