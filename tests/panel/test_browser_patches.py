"""Chromium fed patch frames for a long scripted run (with a patch it never got, and a reconnect) ends
up with exactly the engine section, and fleet tally, that a fresh load of the page renders."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.credentials import TOKEN
from tests.process_support import ServedSite, free_port, stop_now, wait_http

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Counts the frames the page gets, drops the next `__dropPatches` patch frames (a frame lost on its
# way: the page must notice the gap) and lets the test close the socket (a reconnect).
WIRE_HOOK = """(() => {
  const Native = window.WebSocket;
  window.__frames = { patch: 0, snapshot: 0, dropped: 0, resyncs: 0, lists: 0, cells: 0 };
  window.__dropPatches = 0;
  window.__sockets = [];
  window.WebSocket = class extends Native {
    constructor(url, protocols) { super(url, protocols); window.__sockets.push(this); window.__url = url; }
    set onmessage(handler) {
      super.onmessage = function (ev) {
        const frame = JSON.parse(ev.data), type = frame.type;
        if (type === "patch" && window.__dropPatches > 0) { window.__dropPatches--; window.__frames.dropped++; return; }
        if (type in window.__frames) window.__frames[type]++;
        if (frame.lists) window.__frames.lists++;
        if (Object.keys(frame.regions || {}).some(n => n.startsWith("cell:"))) window.__frames.cells++;
        return handler.call(this, ev);
      };
    }
    send(data) { if (String(data).includes('"resync"')) window.__frames.resyncs++; return super.send(data); }
  };
})()"""

# The engine sections without what only the live page changes by design: the durations it ticks,
# the collapse toggle it adds and the activity it fetches; attributes in name order.
NORMALIZED_ENGINES = """() => {
  const out = [];
  for (const section of document.querySelectorAll('#engines > section.engine')) {
    const copy = section.querySelector('.engine-body').cloneNode(true);
    // What the browser keeps growing by itself (docs/SNAPSHOT.md "Ticking values": durations, their
    // hover text, "updated 3 s ago") is compared as the server masks it: the element, not its value.
    copy.querySelectorAll('[data-live-secs], [data-updated-at], [data-bind]').forEach(el => {
      for (const name of ['data-live-secs', 'data-updated-at', 'datetime', 'title']) {
        if (el.hasAttribute(name)) el.setAttribute(name, '');
      }
      if (!el.children.length) el.textContent = '';
    });
    const walk = (el) => {
      const attrs = Array.from(el.attributes).map(a => a.name + '=' + JSON.stringify(a.value)).sort();
      const kids = Array.from(el.childNodes).map(n => n.nodeType === 1 ? walk(n)
        : n.nodeType === 3 ? JSON.stringify(n.textContent.replace(/\\s+/g, ' ')) : '').filter(s => s && s !== '" "');
      return '<' + el.tagName.toLowerCase() + ' ' + attrs.join(' ') + '>' + kids.join('') + '</>';
    };
    out.push([section.dataset.engineId, walk(copy)]);
  }
  return out;
}"""

FLEET_TALLY = """() => Array.from(document.querySelectorAll('#fleet [data-sum]'))
  .filter(el => el.dataset.sum !== 'ppm').map(el => [el.dataset.sum, el.textContent.trim()])"""


@pytest.fixture
def scripted_server(tmp_path):
    site = ServedSite(tmp_path / "site", TOKEN)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.panel.patch_server", "--port", str(port),
                             "--steps", "158", "--pace", "0.05"], cwd=site.root, env=site.env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        assert "READY" in proc.stdout.readline()
        wait_http(f"http://127.0.0.1:{port}/healthz", proc, timeout=60)
        yield f"http://127.0.0.1:{port}", proc
    finally:
        stop_now(proc)


def _final_seq(proc) -> int:
    for line in proc.stdout:
        if line.startswith("DONE"):
            return int(line.split()[1])
    raise AssertionError("the scripted server ended without DONE")


def _section_seq(page) -> int:
    return int(page.evaluate("() => document.querySelector('#engines .engine-body').dataset.seq || -1"))


def test_patched_page_equals_a_fresh_load_after_a_gap_and_a_reconnect(scripted_server, panel_login):
    base, proc = scripted_server
    live = panel_login(base, TOKEN)
    live.add_init_script(WIRE_HOOK)
    live.reload()
    live.wait_for_function("() => document.querySelector('[data-conn]').textContent === 'live'")
    assert "patch=1" in live.evaluate("() => window.__url")
    time.sleep(2.5)  # the run has started: patches flow
    live.evaluate("() => { window.__dropPatches = 1; }")  # a patch lost on its way
    live.wait_for_function("() => window.__frames.dropped === 1 && window.__frames.resyncs >= 1", timeout=10000)
    time.sleep(1.5)
    live.evaluate("() => window.__sockets.forEach(s => s.close())")  # a reconnect, mid-run
    live.wait_for_function("() => window.__sockets.length >= 2 && window.__sockets.at(-1).readyState === 1",
                           timeout=15000)
    final = _final_seq(proc)
    live.wait_for_function(f"() => document.querySelector('#engines .engine-body').dataset.seq === '{final}'",
                           timeout=15000)
    frames = live.evaluate("() => window.__frames")
    assert frames["patch"] >= 30, frames  # a long run of deltas, not a run of full frames
    # Jobs came and went (a list reordered) and partitions moved on (a cell alone replaced).
    assert frames["lists"] >= 1 and frames["cells"] >= 10, frames
    assert live.js_errors == []

    fresh = panel_login(base, TOKEN, javascript=False)
    assert _section_seq(fresh) == final
    patched, loaded = live.evaluate(NORMALIZED_ENGINES), fresh.evaluate(NORMALIZED_ENGINES)
    assert patched == loaded
    # An open phase is left on the GPU: it keeps growing in the patched page.
    ticking = "() => Array.from(document.querySelectorAll('#engines .live[data-live-secs]')).map(e => e.textContent)"
    before = live.evaluate(ticking)
    assert before, "the run ends with a partition on the GPU: a live duration is shown"
    time.sleep(1.2)
    assert live.evaluate(ticking) != before
    live.wait_for_timeout(400)  # the summary is recounted 150 ms after a frame
    assert live.evaluate(FLEET_TALLY) == fresh.evaluate(FLEET_TALLY)
