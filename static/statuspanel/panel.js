// Live updates for the server-rendered panel: no framework, no build step.
// The server sends each engine's partial already rendered; this swaps in only the regions whose
// HTML changed (no flicker), ticks open durations between frames, reconnects with backoff, and
// marks engines stale when the socket is lost or an engine's heartbeat expires. The fleet summary on
// top adds up the tally each engine's partial carries (data-tally); each engine section collapses to
// its summary row, the choice kept in localStorage per engine id.
(function () {
  "use strict";
  const panel = document.getElementById("panel");
  if (!panel) return;
  const enginesEl = document.getElementById("engines");
  const connEl = document.querySelector("[data-conn]");
  const historyEl = document.getElementById("history");
  const clockOffset = parseFloat(panel.dataset.serverNow) - Date.now() / 1000 || 0;
  const engines = new Map(); // engine id -> {section, seq, base, lastFrame, lastWall, hb, total, tally}
  // Each live duration's anchor (performance.now() at its snapshot's publish time): a patch replaces
  // only the regions that changed, so the durations on one page come from different snapshots.
  const anchors = new WeakMap();
  let socket = null, backoff = 1000, lostSince = null, retryAt = 0, historyTimer = null, ticker = null;
  let summaryTimer = null;
  const COLLAPSE_KEY = "vastmanager.panel.collapsed";
  const collapseOver = parseInt(enginesEl.dataset.collapseOver, 10) || 6;

  function fmt(secs) {
    secs = Math.max(0, secs);
    if (secs < 60) return secs.toFixed(1) + " s";
    const w = Math.floor(secs);
    if (w < 3600) return Math.floor(w / 60) + "m " + String(w % 60).padStart(2, "0") + "s";
    return Math.floor(w / 3600) + "h " + String(Math.floor((w % 3600) / 60)).padStart(2, "0") + "m";
  }
  function clock(ms) { return new Date(ms).toLocaleTimeString(); }

  function adopt(section, collapsedByDefault) {
    const id = section.dataset.engineId, body = section.querySelector(".engine-body");
    const st = { section: section, seq: -1, base: performance.now(), lastFrame: performance.now(),
               lastWall: Date.now(), hb: 2, total: null, tally: null, stale: false };
    if (body) { stamp(st, body, true); anchor(st, body); }
    engines.set(id, st);
    const toggle = document.createElement("button");
    toggle.type = "button";
    toggle.className = "collapse-toggle";
    toggle.dataset.collapseToggle = "";
    section.insertBefore(toggle, section.firstChild);
    const stored = storedCollapse()[id];
    setCollapsed(st, typeof stored === "boolean" ? stored : collapsedByDefault);
    return st;
  }

  // -- collapsing: per engine id, in localStorage; engines never chosen follow the page's default --
  function storedCollapse() {
    try { return JSON.parse(localStorage.getItem(COLLAPSE_KEY) || "{}") || {}; } catch (e) { return {}; }
  }
  function saveCollapse(changes) {
    const all = storedCollapse();
    Object.keys(changes).forEach(function (id) { all[id] = changes[id]; });
    try { localStorage.setItem(COLLAPSE_KEY, JSON.stringify(all)); } catch (e) { /* private mode: not kept */ }
  }
  function setCollapsed(st, collapsed) {
    const was = st.section.classList.contains("collapsed");
    st.section.classList.toggle("collapsed", collapsed);
    const toggle = st.section.querySelector("[data-collapse-toggle]");
    if (toggle) {
      toggle.setAttribute("aria-expanded", String(!collapsed));
      toggle.title = collapsed ? "show this engine" : "collapse to its summary row";
      toggle.textContent = collapsed ? "\u25B8" : "\u25BE";
    }
    if (was && !collapsed) refreshActivity(st, true); // its activity was not kept up while collapsed
  }
  panel.addEventListener("click", function (ev) {
    const t = ev.target.closest ? ev.target : null;
    const toggle = t && t.closest("[data-collapse-toggle]");
    if (toggle) {
      const st = engines.get(toggle.closest("section.engine").dataset.engineId);
      const collapsed = !st.section.classList.contains("collapsed");
      setCollapsed(st, collapsed);
      saveCollapse({ [st.section.dataset.engineId]: collapsed });
      return;
    }
    const all = t && t.closest("[data-collapse-all]");
    if (all) {
      const collapsed = all.dataset.collapseAll === "1", changes = {};
      engines.forEach(function (st, id) { setCollapsed(st, collapsed); changes[id] = collapsed; });
      saveCollapse(changes);
      return;
    }
    const link = t && t.closest("[data-engine-link], .warn-badge");
    const section = link && (link.dataset.engineLink ? engines.get(link.dataset.engineLink) : engines.get(link.closest("section.engine").dataset.engineId));
    if (section && section.section.classList.contains("collapsed")) setCollapsed(section, false);
  });

  // Anchor live durations at the snapshot's publish time (corrected for clock skew).
  function stamp(st, body, fromPage) {
    const pub = parseFloat(body.dataset.publishedAt), now = performance.now();
    const age = isNaN(pub) ? 0 : Math.max(0, Date.now() / 1000 + clockOffset - pub);
    st.base = now - age * 1000;
    st.seq = parseInt(body.dataset.seq, 10);
    if (isNaN(st.seq)) st.seq = -1;
    st.hb = parseFloat(body.dataset.heartbeatSecs) || st.hb;
    st.lastFrame = fromPage ? now - age * 1000 : now;
    st.lastWall = fromPage ? Date.now() - age * 1000 : Date.now();
  }

  // The live durations in `el` (and `el` itself) count from this engine's latest snapshot.
  function anchor(st, el) {
    if (el.dataset && el.dataset.liveSecs !== undefined) anchors.set(el, st.base);
    el.querySelectorAll("[data-live-secs]").forEach(function (x) { anchors.set(x, st.base); });
  }
  function liveValue(st, el, now) {
    const v = parseFloat(el.dataset.liveSecs);
    const base = anchors.has(el) ? anchors.get(el) : st.base;
    return isNaN(v) ? NaN : v + (parseFloat(el.dataset.rate) || 1) * (now - base) / 1000;
  }

  function sectionFor(id) {
    const st = engines.get(id);
    if (st) return st;
    const section = document.createElement("section");
    section.className = "engine";
    section.dataset.engineId = id;
    section.id = "engine-" + id;
    const after = Array.prototype.find.call(enginesEl.children, function (s) { return s.dataset.engineId > id; });
    enginesEl.insertBefore(section, after || null);
    const gone = document.querySelector('[data-offline-engine-id="' + CSS.escape(id) + '"]');
    if (gone) gone.remove();
    const empty = document.getElementById("no-engines");
    if (empty) empty.hidden = true;
    return adopt(section, engines.size + 1 > collapseOver);
  }

  // -- patches (static/statuspanel/patches.js): a patch applies only to the frame it was built from;
  // otherwise a frame went missing, and this engine's full frame is asked for again (once).
  function requestResync(id, st) {
    if (st && st.resyncing) return;
    if (st) st.resyncing = true;
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "resync", engine_id: id }));
  }
  function applyPatch(frame) {
    const st = engines.get(frame.engine_id);
    if (st && st.resyncing) return; // the full frame asked for is on its way
    const body = st && st.section.querySelector(".engine-body");
    const inserted = [];
    if (!body || frame.base !== st.seq ||
        !window.vastmanagerPatches.apply(body, frame, function (el) { inserted.push(el); })) {
      requestResync(frame.engine_id, st);
      return;
    }
    stamp(st, body, false);
    inserted.forEach(function (el) { anchor(st, el); });
    updated(st, body, frame.counters);
  }

  function applyFrame(frame) {
    if (frame.type === "patch") return applyPatch(frame);
    if (frame.type !== "snapshot" || typeof frame.html !== "string") return;
    const st = sectionFor(frame.engine_id);
    st.resyncing = false;
    if (typeof frame.seq === "number" && frame.seq <= st.seq) return; // stale: never go backwards
    const tpl = document.createElement("template");
    tpl.innerHTML = frame.html.trim();
    const body = tpl.content.querySelector(".engine-body");
    if (!body) return;
    const oldBody = st.section.querySelector(".engine-body");
    if (oldBody) oldBody.replaceWith(body); else st.section.appendChild(body);
    stamp(st, body, false);
    anchor(st, body);
    updated(st, body, frame.snapshot && frame.snapshot.counters);
  }

  // After a frame or a patch: re-anchor the live durations, recount the tally, refresh what follows.
  function updated(st, body, c) {
    // A value that changes at every snapshot lives in a body attribute, shown where `data-bind` names it.
    body.querySelectorAll("[data-bind]").forEach(function (el) {
      const v = body.getAttribute("data-" + el.dataset.bind);
      if (v !== null && el.textContent !== v) el.textContent = v;
    });
    readTally(st, body);
    st.section.classList.remove("stale");
    if (st.stale) { st.stale = false; scheduleSummary(); }
    refreshActivity(st);
    tickEngine(st, performance.now(), socket && socket.readyState === WebSocket.OPEN);
    if (c) {
      const total = (c.total_completed || 0) + (c.total_failed || 0);
      if (st.total !== null && total !== st.total) refreshHistory();
      st.total = total;
    }
  }

  function refreshHistory() {
    if (!historyEl || historyTimer) return;
    historyTimer = setTimeout(function () {
      historyTimer = null;
      fetch(panel.dataset.historyUrl, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) { if (html !== null && html !== historyEl.innerHTML) historyEl.innerHTML = html; })
        .catch(function () {});
    }, 500);
  }

  // The timeline and charts are server-rendered SVG: a live frame of an engine refetches its
  // activity region, which adds the bars of partitions settled since: never while the previous
  // fetch is on its way, and only ACTIVITY_MS plus as long as that fetch took after it ended (a
  // region slow to build is asked for less often, never faster than it can be built).
  const ACTIVITY_MS = 2000;
  function activitySlot(st) {
    let slot = st.section.querySelector(".activity-slot");
    if (!slot && panel.dataset.activityBase) {
      slot = document.createElement("div");
      slot.className = "activity-slot";
      slot.dataset.activityUrl = panel.dataset.activityBase.replace("ENGINE", encodeURIComponent(st.section.dataset.engineId));
      slot.dataset.window = "10m";
      st.section.appendChild(slot);
    }
    return slot;
  }
  function refreshActivity(st, force) {
    // Collapsed engines show no activity; fleet sources keep their history on their own host.
    if (st.section.classList.contains("collapsed")) return;
    const body = st.section.querySelector(".engine-body");
    if (body && body.dataset.fleetSource !== undefined) return;
    const slot = activitySlot(st);
    if (!slot || st.activityBusy) return;
    const wait = (st.activityAt || 0) + ACTIVITY_MS + (st.activityCost || 0) - Date.now();
    if (wait > 0 && !force) {
      if (!st.activityTimer) st.activityTimer = setTimeout(function () { st.activityTimer = null; refreshActivity(st); }, wait);
      return;
    }
    st.activityBusy = true;
    const began = Date.now();
    fetch(slot.dataset.activityUrl + "?window=" + encodeURIComponent(slot.dataset.window || "10m"), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null && html !== slot.innerHTML) slot.innerHTML = html; })
      .catch(function () {})
      .then(function () { st.activityBusy = false; st.activityAt = Date.now(); st.activityCost = st.activityAt - began; });
  }
  enginesEl.addEventListener("click", function (ev) {
    const link = ev.target.closest && ev.target.closest("[data-window-choice]");
    const section = link && link.closest("section.engine");
    if (!section || !engines.has(section.dataset.engineId)) return;
    ev.preventDefault();
    activitySlot(engines.get(section.dataset.engineId)).dataset.window = link.dataset.windowChoice;
    refreshActivity(engines.get(section.dataset.engineId), true);
  });

  function setStale(st, sinceMs) {
    st.section.classList.add("stale");
    if (!st.stale) { st.stale = true; scheduleSummary(); }
    const el = st.section.querySelector("[data-liveness]");
    const text = "stale since " + clock(sinceMs);
    if (el && el.textContent !== text) {
      el.textContent = text;
      el.className = "liveness stale";
      el.title = "no update since " + new Date(sinceMs).toISOString();
    }
  }

  // "updated 3 s ago": the age of the engine's last snapshot, on the server's clock.
  function tickUpdated(st) {
    const el = st.section.querySelector("[data-updated-at]"), body = st.section.querySelector(".engine-body");
    if (!el || !body) return;
    const age = Date.now() / 1000 + clockOffset - parseFloat(body.dataset.publishedAt);
    if (isNaN(age)) return;
    const text = (age < 1.5 ? "just now" : fmt(Math.round(age)).replace(".0 s", " s") + " ago");
    if (el.textContent !== text) el.textContent = text;
  }

  function tickEngine(st, now, open) {
    tickUpdated(st);
    // Stale data stops ticking: a growing duration would claim work we can no longer see.
    if (!open && lostSince !== null) return setStale(st, Math.min(lostSince, st.lastWall + 2 * st.hb * 1000));
    if (now - st.lastFrame > 2 * st.hb * 1000) return setStale(st, st.lastWall);
    if (st.section.classList.contains("collapsed")) return; // nothing ticking is shown
    st.section.querySelectorAll(".live[data-live-secs]").forEach(function (el) {
      const v = liveValue(st, el, now);
      if (isNaN(v)) return;
      const t = fmt(v);
      if (el.textContent !== t) el.textContent = t;
    });
  }

  // A waterfall cell in an open phase: its hover text gives that phase's time as of now.
  enginesEl.addEventListener("mouseover", function (ev) {
    const el = ev.target.closest ? ev.target.closest("[data-live-label]") : null;
    const section = el && el.closest("section.engine");
    const st = section && engines.get(section.dataset.engineId);
    if (!st || st.stale) return;
    const v = liveValue(st, el, performance.now());
    if (isNaN(v)) return;
    const label = el.dataset.liveLabel;
    el.title = el.title.split(" \u00b7 ").map(function (bit) {
      return bit.indexOf(label + " ") === 0 ? label + " " + fmt(v) : bit;
    }).join(" \u00b7 ");
  });

  function tick() {
    const now = performance.now(), open = socket && socket.readyState === WebSocket.OPEN;
    engines.forEach(function (st) { tickEngine(st, now, open); });
    if (connEl && !open && lostSince !== null) {
      const wait = Math.max(0, Math.ceil((retryAt - Date.now()) / 1000));
      connEl.textContent = "disconnected since " + clock(lostSince) + (wait ? " · retry in " + wait + " s" : " · connecting");
    }
  }

  function connect() {
    const proto = location.protocol === "https:" ? "wss://" : "ws://";
    const path = panel.dataset.wsPath;
    socket = new WebSocket(proto + location.host + path + (path.indexOf("?") < 0 ? "?" : "&") + "patch=1");
    socket.onopen = function () {
      backoff = 1000; lostSince = null;
      engines.forEach(function (st) { st.resyncing = false; }); // a new connection starts with full frames
      if (connEl) { connEl.textContent = "live"; connEl.className = "conn conn-live"; }
    };
    socket.onmessage = function (ev) {
      let frame;
      try { frame = JSON.parse(ev.data); } catch (e) { return; }
      if (frame.type === "error") { console.warn("panel:", frame.error); return; }
      if (frame.type === "alerts") { panel.dispatchEvent(new CustomEvent("panel:alerts", { detail: frame })); return; }
      applyFrame(frame);
    };
    socket.onclose = function () {
      if (lostSince === null) lostSince = Date.now();
      if (connEl) connEl.className = "conn conn-lost";
      const delay = Math.min(backoff, 30000) * (0.8 + Math.random() * 0.4);
      backoff = Math.min(backoff * 2, 30000);
      retryAt = Date.now() + delay;
      setTimeout(connect, delay);
      tick();
    };
  }

  // Tick only while the tab is visible: a hidden tab has nobody to show durations to.
  function startTicking() {
    if (ticker === null) ticker = setInterval(tick, 250);
    tick();
  }
  function stopTicking() {
    if (ticker !== null) clearInterval(ticker);
    ticker = null;
  }
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) stopTicking(); else startTicking();
  });

  // -- the fleet summary: the sum of every engine's tally, counted as the server counts it
  // (statuspanel/fleet_render.py fleet_summary); an engine this page sees as stale is not online.
  function readTally(st, body) {
    try { st.tally = JSON.parse(body.dataset.tally || "null"); } catch (e) { st.tally = null; }
    scheduleSummary();
  }
  function scheduleSummary() {
    if (summaryEl && summaryTimer === null) summaryTimer = setTimeout(summarize, 150);
  }
  function summarize() {
    summaryTimer = null;
    const sum = { engines: document.querySelectorAll("[data-offline-engine-id]").length, online: 0, warnings: 0,
                  ppm: null, failing: [], workers: {}, gpus: {}, phases: {} };
    engines.forEach(function (st) {
      const t = st.tally;
      sum.engines += 1;
      if (!t) return;
      if (t.failing) sum.failing.push(t);
      if (t.state !== "online" || st.stale) return;
      sum.online += 1;
      sum.warnings += t.warnings || 0;
      ["workers", "gpus", "phases"].forEach(function (g) {
        Object.keys(t[g] || {}).forEach(function (k) { sum[g][k] = (sum[g][k] || 0) + t[g][k]; });
      });
      if (typeof t.ppm === "number") sum.ppm = (sum.ppm || 0) + t.ppm;
    });
    summaryEl.querySelectorAll("[data-sum]").forEach(function (el) {
      const path = el.dataset.sum.split(".");
      let v = path.length === 2 ? (sum[path[0]] || {})[path[1]] || 0 : sum[path[0]];
      if (path[0] === "failing") v = sum.failing.length;
      const text = path[0] === "ppm" ? (v === null ? "\u2014" : v.toFixed(1)) : String(v);
      if (el.textContent !== text) el.textContent = text;
    });
    const warnBox = summaryEl.querySelector('[data-sum-box="warnings"]');
    if (warnBox) warnBox.classList.toggle("has-warnings", sum.warnings > 0);
    const failBox = summaryEl.querySelector('[data-sum-box="failing"]');
    if (failBox) failBox.classList.toggle("none", sum.failing.length === 0);
    const list = summaryEl.querySelector("[data-failing-list]");
    const key = sum.failing.map(function (t) { return t.id + "\u0000" + t.state; }).join("\u0001");
    if (list && list.dataset.key !== key) {
      list.dataset.key = key;
      list.textContent = "";
      sum.failing.forEach(function (t) {
        const a = document.createElement("a");
        a.href = "#engine-" + t.id;
        a.dataset.engineLink = t.id;
        a.className = "src-" + t.state;
        a.textContent = t.id + " (" + t.state + ")";
        list.appendChild(document.createTextNode(" "));
        list.appendChild(a);
      });
    }
  }

  const summaryEl = document.getElementById("fleet");
  const initial = document.querySelectorAll("#engines > section.engine");
  initial.forEach(function (section) {
    const st = adopt(section, section.classList.contains("collapsed"));
    const body = section.querySelector(".engine-body");
    if (body) readTally(st, body);
  });
  const actions = document.querySelector("[data-fleet-actions]");
  if (actions) actions.hidden = false;
  if (document.hidden) tick(); else startTicking();
  if ("WebSocket" in window) connect();
})();
