// Live updates for the server-rendered panel: no framework, no build step.
// The server sends each engine's partial already rendered; this swaps in only the regions whose
// HTML changed (no flicker), ticks open durations between frames, reconnects with backoff, and
// marks engines stale when the socket is lost or an engine's heartbeat expires.
(function () {
  "use strict";
  const panel = document.getElementById("panel");
  if (!panel) return;
  const enginesEl = document.getElementById("engines");
  const connEl = document.querySelector("[data-conn]");
  const historyEl = document.getElementById("history");
  const clockOffset = parseFloat(panel.dataset.serverNow) - Date.now() / 1000 || 0;
  const engines = new Map(); // engine id -> {section, seq, base, lastFrame, lastWall, hb, regions, total}
  let socket = null, backoff = 1000, lostSince = null, retryAt = 0, historyTimer = null, ticker = null;

  function fmt(secs) {
    secs = Math.max(0, secs);
    if (secs < 60) return secs.toFixed(1) + " s";
    const w = Math.floor(secs);
    if (w < 3600) return Math.floor(w / 60) + "m " + String(w % 60).padStart(2, "0") + "s";
    return Math.floor(w / 3600) + "h " + String(Math.floor((w % 3600) / 60)).padStart(2, "0") + "m";
  }
  function clock(ms) { return new Date(ms).toLocaleTimeString(); }

  function adopt(section) {
    const id = section.dataset.engineId, body = section.querySelector(".engine-body");
    const st = { section: section, seq: -1, base: performance.now(), lastFrame: performance.now(),
               lastWall: Date.now(), hb: 2, regions: new Map(), total: null };
    if (body) stamp(st, body, true);
    section.querySelectorAll("[data-region]").forEach(function (r) { st.regions.set(r.dataset.region, r.outerHTML); });
    engines.set(id, st);
    return st;
  }

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

  function sectionFor(id) {
    const st = engines.get(id);
    if (st) return st;
    const section = document.createElement("section");
    section.className = "engine";
    section.dataset.engineId = id;
    const after = Array.prototype.find.call(enginesEl.children, function (s) { return s.dataset.engineId > id; });
    enginesEl.insertBefore(section, after || null);
    const gone = document.querySelector('[data-offline-engine-id="' + CSS.escape(id) + '"]');
    if (gone) gone.remove();
    const empty = document.getElementById("no-engines");
    if (empty) empty.hidden = true;
    return adopt(section);
  }

  function applyFrame(frame) {
    if (frame.type !== "snapshot" || typeof frame.html !== "string") return;
    const st = sectionFor(frame.engine_id);
    if (typeof frame.seq === "number" && frame.seq <= st.seq) return; // stale: never go backwards
    const tpl = document.createElement("template");
    tpl.innerHTML = frame.html.trim();
    let body = tpl.content.querySelector(".engine-body");
    if (!body) return;
    const oldBody = st.section.querySelector(".engine-body");
    const newRegions = Array.prototype.map.call(body.querySelectorAll("[data-region]"), function (r) { return r.dataset.region; });
    const sameShape = oldBody && newRegions.join() === Array.from(st.regions.keys()).join();
    if (!sameShape) {
      if (oldBody) oldBody.replaceWith(body); else st.section.appendChild(body);
      st.regions = new Map();
      body.querySelectorAll("[data-region]").forEach(function (r) { st.regions.set(r.dataset.region, r.outerHTML); });
    } else {
      body.querySelectorAll("[data-region]").forEach(function (r) {
        const html = r.outerHTML, name = r.dataset.region;
        if (st.regions.get(name) === html) return;
        const old = oldBody.querySelector('[data-region="' + name + '"]');
        if (old) old.replaceWith(r);
        st.regions.set(name, html);
      });
      ["seq", "publishedAt", "heartbeatSecs"].forEach(function (k) { oldBody.dataset[k] = body.dataset[k]; });
      body = oldBody;
    }
    stamp(st, body, false);
    st.section.classList.remove("stale");
    refreshActivity(st);
    tick();
    const c = frame.snapshot && frame.snapshot.counters;
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
  // activity region (at most every ACTIVITY_MS), which adds the bars of partitions settled since.
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
    const slot = activitySlot(st);
    if (!slot || st.activityBusy) return;
    const wait = (st.activityAt || 0) + ACTIVITY_MS - Date.now();
    if (wait > 0 && !force) {
      if (!st.activityTimer) st.activityTimer = setTimeout(function () { st.activityTimer = null; refreshActivity(st); }, wait);
      return;
    }
    st.activityBusy = true;
    st.activityAt = Date.now();
    fetch(slot.dataset.activityUrl + "?window=" + encodeURIComponent(slot.dataset.window || "10m"), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null && html !== slot.innerHTML) slot.innerHTML = html; })
      .catch(function () {})
      .then(function () { st.activityBusy = false; });
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
    const el = st.section.querySelector("[data-liveness]");
    const text = "stale since " + clock(sinceMs);
    if (el && el.textContent !== text) {
      el.textContent = text;
      el.className = "liveness stale";
      el.title = "no update since " + new Date(sinceMs).toISOString();
    }
  }

  function tick() {
    const now = performance.now(), open = socket && socket.readyState === WebSocket.OPEN;
    engines.forEach(function (st) {
      // Stale data stops ticking: a growing duration would claim work we can no longer see.
      if (!open && lostSince !== null) return setStale(st, Math.min(lostSince, st.lastWall + 2 * st.hb * 1000));
      if (now - st.lastFrame > 2 * st.hb * 1000) return setStale(st, st.lastWall);
      const elapsed = (now - st.base) / 1000;
      st.section.querySelectorAll(".live[data-live-secs]").forEach(function (el) {
        const v = parseFloat(el.dataset.liveSecs);
        if (isNaN(v)) return;
        const t = fmt(v + (parseFloat(el.dataset.rate) || 1) * elapsed);
        if (el.textContent !== t) el.textContent = t;
      });
    });
    if (connEl && !open && lostSince !== null) {
      const wait = Math.max(0, Math.ceil((retryAt - Date.now()) / 1000));
      connEl.textContent = "disconnected since " + clock(lostSince) + (wait ? " · retry in " + wait + " s" : " · connecting");
    }
  }

  function connect() {
    const proto = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(proto + location.host + panel.dataset.wsPath);
    socket.onopen = function () {
      backoff = 1000; lostSince = null;
      if (connEl) { connEl.textContent = "live"; connEl.className = "conn conn-live"; }
    };
    socket.onmessage = function (ev) {
      let frame;
      try { frame = JSON.parse(ev.data); } catch (e) { return; }
      if (frame.type === "error") { console.warn("panel:", frame.error); return; }
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

  document.querySelectorAll("#engines > section.engine").forEach(adopt);
  if (document.hidden) tick(); else startTicking();
  if ("WebSocket" in window) connect();
})();
