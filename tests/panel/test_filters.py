"""Formatting filters of the panel (panel.js mirrors `duration` for the live ticking)."""
from __future__ import annotations

import pytest

from statuspanel.templatetags.panel_tags import duration, human_bytes, ms_duration, pct, phase_title, worker_label


@pytest.mark.parametrize("secs,text", [(0, "0.0 s"), (12.34, "12.3 s"), (59.94, "59.9 s"), (60, "1m 00s"),
                                       (245, "4m 05s"), (3599, "59m 59s"), (3600, "1h 00m"), (7385, "2h 03m"),
                                       (-3, "0.0 s"), (None, "—"), ("x", "—")])
def test_duration(secs, text):
    assert duration(secs) == text


def test_ms_duration_and_bytes_and_pct():
    assert ms_duration(36085) == "36.1 s" and ms_duration(None) == "—"
    assert human_bytes(512) == "512 B" and human_bytes(35433480192) == "33.0 GiB" and human_bytes(None) == "—"
    assert pct(67.46) == "67%" and pct(67.46, 1) == "67.5%" and pct(None) == "—"


def test_phase_title_carries_everything_in_full():
    title = phase_title({"index": 6, "state": "failed", "synth_ms": 36222, "gpu_ms": 5200, "finalize_ms": None,
                         "worker_id": 1, "error": "CUDA error: an illegal memory access was encountered"})
    assert title == ("partition 6 · failed · synth 36.2 s · gpu 5.2 s · worker W1\n"
                     "error: CUDA error: an illegal memory access was encountered")


def test_worker_label():
    assert worker_label(0) == "W0" and worker_label("cpu0-w0") == "cpu0-w0" and worker_label(None) == "—"


@pytest.mark.parametrize("ms,text", [(None, "—"), ("x", "—"), (0.85, "850 µs"), (3.25, "3.2 ms"), (12.4, "12 ms"),
                                     (999, "999 ms"), (1250, "1.25 s"), (65_000, "1m 05s"), (float("nan"), "—")])
def test_latency_ms(ms, text):
    from gpu_engine.formatting import latency_ms

    assert latency_ms(ms) == text
