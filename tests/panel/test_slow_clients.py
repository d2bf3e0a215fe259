"""50 WebSocket clients that never read, for 60 s, while the engine proves: the serving process's
memory stays within a stated bound, fast clients keep their frame rate, and the slow ones are
dropped (the old server buffered every frame for them: +150 MB and more in a minute, never returned).

Figures for the same scenario, old server and new: bench/slow_clients.py."""
from __future__ import annotations

import pytest

from tests.credentials import TOKEN
from tests.panel.wsclients import slow_client_run
from tests.process_support import ServedSite

pytestmark = pytest.mark.slow

SLOW_CLIENTS = 50
SECONDS = 60
# What 50 slow clients may add to the serving process's RSS: their consumers, protocol objects and
# at most about one transport buffer (64 KiB) and one kept frame per engine each. The process's own
# caches must not grow with the frames published meanwhile either (statuspanel/render/cache.py).
RSS_GROWTH_BOUND_MB = 64
# Fast clients keep at least this share of the frame rate they had before the slow ones came
# (a shared 2-core machine makes the rate itself noisy).
FAST_RATE_SHARE = 0.5


def test_fifty_clients_that_never_read(tmp_path, params_dir):
    site = ServedSite(tmp_path / "site", TOKEN, VASTMANAGER_PARAMS_DIR=str(params_dir), WS_SLOW_CLIENT_SECS="20")
    proc = site.start("runprover", "--demo", "--backend", "cpu", "--synth-workers", "1")
    try:
        figures = slow_client_run(proc.pid, site.port, TOKEN, slow=SLOW_CLIENTS, seconds=SECONDS)
    finally:
        site.stop()
    print(figures)
    growth = figures["rss_peak_mb"] - figures["rss_before_mb"]
    assert growth < RSS_GROWTH_BOUND_MB, figures
    assert figures["fast_rate_before"] > 0, figures
    assert figures["fast_rate_during"] >= FAST_RATE_SHARE * figures["fast_rate_before"], figures
    assert figures["slow_still_connected"] == 0, figures
    log = site.log()
    assert log.count("dropping slow WebSocket client") >= SLOW_CLIENTS, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
