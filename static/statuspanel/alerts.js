// The alert strip: live from the stream's alerts frames (panel.js hands them over as a "panel:alerts"
// event), ages counted every second, badges on each engine section and on the alert's subject (the
// worker card, the partition cell, the source header), and the acknowledge and silence buttons
// (the session's CSRF token; the server records who and when, and the next frame shows it to all).
(function () {
  "use strict";
  const panel = document.getElementById("panel");
  const strip = document.querySelector("[data-alerts]");
  if (!panel || !strip) return;
  // Ask the stream for the alerts frame: this script runs before panel.js (both deferred, in order),
  // which opens the socket on this path.
  const wsPath = panel.dataset.wsPath || "";
  if (!/[?&]alerts=/.test(wsPath)) panel.dataset.wsPath = wsPath + (wsPath.indexOf("?") < 0 ? "?" : "&") + "alerts=1";
  const body = strip.querySelector("[data-alerts-body]");
  const enginesEl = document.getElementById("engines");
  let clockOffset = parseFloat(panel.dataset.serverNow) - Date.now() / 1000 || 0;
  const SEVERITY_RANK = { warning: 1, critical: 2 };

  function fmt(secs) {
    const w = Math.floor(Math.max(0, secs));
    if (w < 60) return w + "s";
    if (w < 3600) return Math.floor(w / 60) + "m " + String(w % 60).padStart(2, "0") + "s";
    if (w < 86400) return Math.floor(w / 3600) + "h " + String(Math.floor((w % 3600) / 60)).padStart(2, "0") + "m";
    return Math.floor(w / 86400) + "d " + String(Math.floor((w % 86400) / 3600)).padStart(2, "0") + "h";
  }
  function serverNow() { return Date.now() / 1000 + clockOffset; }

  // -- ages and silences, judged every second against the server's clock ------------------------
  function tick() {
    const now = serverNow();
    strip.querySelectorAll("time[data-since]").forEach(function (el) {
      const t = fmt(now - parseFloat(el.dataset.since));
      if (el.textContent !== t) el.textContent = t;
    });
    strip.querySelectorAll("li.alert[data-silenced-until]").forEach(function (li) {
      li.classList.toggle("silenced", parseFloat(li.dataset.silencedUntil) > now);
    });
  }
  function localClocks(root) {
    root.querySelectorAll("time[data-clock]").forEach(function (el) {
      const t = parseFloat(el.dataset.clock);
      if (!isNaN(t)) el.textContent = new Date((t - clockOffset) * 1000).toLocaleString();
    });
  }

  // -- badges: one per engine section (count, worst severity), and one on each subject -----------
  function alertsBy() {
    const byEngine = new Map();
    strip.querySelectorAll("li.alert").forEach(function (li) {
      const e = li.dataset.engine;
      if (!byEngine.has(e)) byEngine.set(e, []);
      byEngine.get(e).push({ rule: li.dataset.rule, subject: li.dataset.subject, severity: li.dataset.severity,
                             silenced: li.classList.contains("silenced"), id: li.dataset.alertId });
    });
    return byEngine;
  }
  function badge(list, text) {
    const worst = list.reduce(function (w, a) { return SEVERITY_RANK[a.severity] > SEVERITY_RANK[w] ? a.severity : w; }, "warning");
    const b = document.createElement("a");
    b.className = "alert-badge sev-" + worst + (list.every(function (a) { return a.silenced; }) ? " silenced" : "");
    b.href = "#alert-" + list[0].id;
    b.dataset.alertBadge = "";
    b.title = list.map(function (a) { return a.rule + ": " + a.subject; }).join("\n");
    b.textContent = text;
    return b;
  }
  function subjectTargets(section, a, engineId) {
    const out = [];
    const worker = /^W(\d+)$/.exec(a.subject);
    if (worker) {
      section.querySelectorAll('article.worker[data-worker-id="' + CSS.escape(worker[1]) + '"] header').forEach(function (h) { out.push(h); });
    }
    const part = /^(.*)#(\d+)$/.exec(a.subject);
    if (part) {
      section.querySelectorAll('tr.pipeline[data-job-id="' + CSS.escape(part[1]) + '"] .cell[data-index="' + part[2] + '"]')
        .forEach(function (c) { out.push(c); });
    }
    if (a.subject === engineId) { // the source (or engine) itself: its header
      const h = section.querySelector(".engine-head .engine-id");
      if (h) out.push(h);
    }
    return out;
  }
  function decorate() {
    if (!enginesEl) return;
    observer.disconnect();
    enginesEl.querySelectorAll("[data-alert-badge]").forEach(function (b) { b.remove(); });
    enginesEl.querySelectorAll(".has-alert").forEach(function (el) {
      el.classList.remove("has-alert", "sev-warning", "sev-critical");
      if (el.dataset.alertTitle !== undefined) { el.title = el.dataset.alertTitle; delete el.dataset.alertTitle; }
    });
    alertsBy().forEach(function (list, engineId) {
      const section = enginesEl.querySelector('section.engine[data-engine-id="' + CSS.escape(engineId) + '"]');
      if (!section) return;
      const head = section.querySelector(".engine-head");
      if (head) head.insertBefore(badge(list, "\u25B2 " + list.length + " alert" + (list.length === 1 ? "" : "s")),
                                  head.querySelector(".engine-id") ? head.querySelector(".engine-id").nextSibling : null);
      list.forEach(function (a) {
        subjectTargets(section, a, engineId).forEach(function (el) {
          el.classList.add("has-alert", "sev-" + a.severity);
          if (el.classList.contains("cell")) { // a partition cell: too small for a badge, marked and titled
            if (el.dataset.alertTitle === undefined) el.dataset.alertTitle = el.title;
            el.title = "ALERT " + a.rule + " \u00B7 " + el.dataset.alertTitle;
          } else if (!el.classList.contains("engine-id")) {
            el.appendChild(badge([a], "\u25B2 " + a.rule));
          }
        });
      });
    });
    observer.observe(enginesEl, { childList: true, subtree: true });
  }
  let decoratePending = false;
  const observer = new MutationObserver(function () { // a live frame replaced a region: badges again
    if (decoratePending) return;
    decoratePending = true;
    requestAnimationFrame(function () { decoratePending = false; decorate(); });
  });

  // -- frames -------------------------------------------------------------------------------------
  function apply(frame) {
    if (!frame || !Array.isArray(frame.alerts)) return;
    if (typeof frame.server_time === "number") clockOffset = frame.server_time - Date.now() / 1000;
    if (typeof frame.html === "string") {
      const open = strip.querySelector("input[data-silence-minutes]:focus");
      const keep = open ? { id: open.closest("li.alert").dataset.alertId, value: open.value } : null;
      body.innerHTML = frame.html;
      if (keep) { // an operator typing a silence length keeps it
        const again = body.querySelector('li.alert[data-alert-id="' + CSS.escape(keep.id) + '"] input[data-silence-minutes]');
        if (again) { again.value = keep.value; again.focus(); }
      }
    }
    strip.hidden = frame.alerts.length === 0;
    prepare();
  }
  function prepare() {
    strip.querySelectorAll("li.alert").forEach(function (li) { li.id = "alert-" + li.dataset.alertId; });
    localClocks(strip);
    tick();
    decorate();
  }
  panel.addEventListener("panel:alerts", function (ev) { apply(ev.detail); });

  // -- acknowledge and silence --------------------------------------------------------------------
  function act(li, action, payload) {
    const err = li.querySelector("[data-alert-error]");
    if (err) err.textContent = "";
    li.classList.add("busy");
    return fetch(strip.dataset.apiBase + "/" + encodeURIComponent(li.dataset.alertId) + "/" + action, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": strip.dataset.csrf || "" },
      body: JSON.stringify(payload || {}),
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (data) {
        if (!r.ok) throw new Error(data.error || (action + " failed: HTTP " + r.status));
        li.classList.add("done-" + action);
      });
    }).catch(function (e) {
      if (err) err.textContent = e.message;
    }).then(function () { li.classList.remove("busy"); });
  }
  strip.addEventListener("click", function (ev) {
    const t = ev.target.closest ? ev.target : null;
    const li = t && t.closest("li.alert");
    if (!li) return;
    if (t.closest("[data-alert-ack]")) act(li, "acknowledge");
    else if (t.closest("[data-alert-silence]")) {
      const input = li.querySelector("[data-silence-minutes]");
      act(li, "silence", { minutes: input ? input.value.trim() : "" });
    }
  });
  strip.addEventListener("submit", function (ev) { ev.preventDefault(); });

  prepare();
  setInterval(tick, 1000);
})();
