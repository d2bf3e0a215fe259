// Live updates for the server-rendered panel: no framework, no build step.
// The server sends each engine's partial already rendered; this swaps in only the regions whose
// HTML changed (no flicker), ticks open durations between frames, reconnects with backoff, and
// marks engines stale when the socket is lost or an engine's heartbeat expires.
(function () {
  "use strict";
  var panel = document.getElementById("panel");
  if (!panel) return;
  var enginesEl = document.getElementById("engines");
  var connEl = document.querySelector("[data-conn]");
  var historyEl = document.getElementById("history");
  var clockOffset = parseFloat(panel.dataset.serverNow) - Date.now() / 1000 || 0;
  var engines = new Map(); // engine id -> {section, seq, base, lastFrame, lastWall, hb, regions, total}
  var socket = null, backoff = 1000, lostSince = null, retryAt = 0, historyTimer = null;

  function fmt(secs) {
    secs = Math.max(0, secs);
    if (secs < 60) return secs.toFixed(1) + " s";
    var w = Math.floor(secs);
    if (w < 3600) return Math.floor(w / 60) + "m " + String(w % 60).padStart(2, "0") + "s";
    return Math.floor(w / 3600) + "h " + String(Math.floor((w % 3600) / 60)).padStart(2, "0") + "m";
  }
  function clock(ms) { return new Date(ms).toLocaleTimeString(); }

  function adopt(section) {
    var id = section.dataset.engineId, body = section.querySelector(".engine-body");
    var st = { section: section, seq: -1, base: performance.now(), lastFrame: performance.now(),
               lastWall: Date.now(), hb: 2, regions: new Map(), total: null };
    if (body) stamp(st, body, true);
    section.querySelectorAll("[data-region]").forEach(function (r) { st.regions.set(r.dataset.region, r.outerHTML); });
    engines.set(id, st);
    return st;
  }

  // Anchor live durations at the snapshot's publish time (corrected for clock skew).
  function stamp(st, body, fromPage) {
    var pub = parseFloat(body.dataset.publishedAt), now = performance.now();
    var age = isNaN(pub) ? 0 : Math.max(0, Date.now() / 1000 + clockOffset - pub);
    st.base = now - age * 1000;
    st.seq = parseInt(body.dataset.seq, 10);
    if (isNaN(st.seq)) st.seq = -1;
    st.hb = parseFloat(body.dataset.heartbeatSecs) || st.hb;
    st.lastFrame = fromPage ? now - age * 1000 : now;
    st.lastWall = fromPage ? Date.now() - age * 1000 : Date.now();
  }

  function sectionFor(id) {
    var st = engines.get(id);
    if (st) return st;
    var section = document.createElement("section");
    section.className = "engine";
    section.dataset.engineId = id;
    var after = Array.prototype.find.call(enginesEl.children, function (s) { return s.dataset.engineId > id; });
    enginesEl.insertBefore(section, after || null);
    var gone = document.querySelector('[data-offline-engine-id="' + CSS.escape(id) + '"]');
    if (gone) gone.remove();
    var empty = document.getElementById("no-engines");
    if (empty) empty.hidden = true;
    return adopt(section);
  }

  function applyFrame(frame) {
    if (frame.type !== "snapshot" || typeof frame.html !== "string") return;
    var st = sectionFor(frame.engine_id);
    if (typeof frame.seq === "number" && frame.seq <= st.seq) return; // stale: never go backwards
    var tpl = document.createElement("template");
    tpl.innerHTML = frame.html.trim();
    var body = tpl.content.querySelector(".engine-body");
    if (!body) return;
    var oldBody = st.section.querySelector(".engine-body");
    var newRegions = Array.prototype.map.call(body.querySelectorAll("[data-region]"), function (r) { return r.dataset.region; });
    var sameShape = oldBody && newRegions.join() === Array.from(st.regions.keys()).join();
    if (!sameShape) {
      if (oldBody) oldBody.replaceWith(body); else st.section.appendChild(body);
      st.regions = new Map();
      body.querySelectorAll("[data-region]").forEach(function (r) { st.regions.set(r.dataset.region, r.outerHTML); });
    } else {
      body.querySelectorAll("[data-region]").forEach(function (r) {
        var html = r.outerHTML, name = r.dataset.region;
        if (st.regions.get(name) === html) return;
        var old = oldBody.querySelector('[data-region="' + name + '"]');
        if (old) old.replaceWith(r);
        st.regions.set(name, html);
      });
      ["seq", "publishedAt", "heartbeatSecs"].forEach(function (k) { oldBody.dataset[k] = body.dataset[k]; });
      body = oldBody;
    }
    stamp(st, body, false);
    st.section.classList.remove("stale");
    tick();
    var c = frame.snapshot && frame.snapshot.counters;
    if (c) {
      var total = (c.total_completed || 0) + (c.total_failed || 0);
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

  function setStale(st, sinceMs) {
    st.section.classList.add("stale");
    var el = st.section.querySelector("[data-liveness]");
    var text = "stale since " + clock(sinceMs);
    if (el && el.textContent !== text) {
      el.textContent = text;
      el.className = "liveness stale";
      el.title = "no update since " + new Date(sinceMs).toISOString();
    }
  }

  function tick() {
    var now = performance.now(), open = socket && socket.readyState === WebSocket.OPEN;
    engines.forEach(function (st) {
      // Stale data stops ticking: a growing duration would claim work we can no longer see.
      if (!open && lostSince !== null) return setStale(st, Math.min(lostSince, st.lastWall + 2 * st.hb * 1000));
      if (now - st.lastFrame > 2 * st.hb * 1000) return setStale(st, st.lastWall);
      var elapsed = (now - st.base) / 1000;
      st.section.querySelectorAll(".live[data-live-secs]").forEach(function (el) {
        var v = parseFloat(el.dataset.liveSecs);
        if (isNaN(v)) return;
        var t = fmt(v + (parseFloat(el.dataset.rate) || 1) * elapsed);
        if (el.textContent !== t) el.textContent = t;
      });
    });
    if (connEl && !open && lostSince !== null) {
      var wait = Math.max(0, Math.ceil((retryAt - Date.now()) / 1000));
      connEl.textContent = "disconnected since " + clock(lostSince) + (wait ? " · retry in " + wait + " s" : " · connecting");
    }
  }

  function connect() {
    var proto = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(proto + location.host + panel.dataset.wsPath);
    socket.onopen = function () {
      backoff = 1000; lostSince = null;
      if (connEl) { connEl.textContent = "live"; connEl.className = "conn conn-live"; }
    };
    socket.onmessage = function (ev) {
      var frame;
      try { frame = JSON.parse(ev.data); } catch (e) { return; }
      if (frame.type === "error") { console.warn("panel:", frame.error); return; }
      applyFrame(frame);
    };
    socket.onclose = function () {
      if (lostSince === null) lostSince = Date.now();
      if (connEl) connEl.className = "conn conn-lost";
      var delay = Math.min(backoff, 30000) * (0.8 + Math.random() * 0.4);
      backoff = Math.min(backoff * 2, 30000);
      retryAt = Date.now() + delay;
      setTimeout(connect, delay);
      tick();
    };
  }

  document.querySelectorAll("#engines > section.engine").forEach(adopt);
  setInterval(tick, 250);
  tick();
  if ("WebSocket" in window) connect();
})();
