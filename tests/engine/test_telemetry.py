"""GPU telemetry: NVML readings in the snapshot's `gpus` shape, or nothing without NVML."""
from __future__ import annotations

import sys
import threading

import pytest

from gpu_engine.engine.telemetry import GpuTelemetry, TelemetryPoller

KEYS = {"ordinal", "name", "util_pct", "mem_used_bytes", "mem_total_bytes", "temp_c", "power_w"}


def test_without_the_nvml_package_poll_is_empty(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    t = GpuTelemetry()
    assert not t.available
    assert t.poll() == []
    t.close()


def test_real_nvml_reports_every_gpu_or_nothing():
    """With the package but no driver (CI) the list is empty; on a GPU host it is filled."""
    t = GpuTelemetry()
    try:
        gpus = t.poll()
        if not t.available:
            assert gpus == []
        else:
            assert gpus and all(set(g) == KEYS for g in gpus)
            assert [g["ordinal"] for g in gpus] == list(range(len(gpus)))
            assert all(g["mem_total_bytes"] and g["mem_total_bytes"] >= g["mem_used_bytes"] for g in gpus)
    finally:
        t.close()
    assert t.poll() == []  # closed


def test_poller_does_not_start_without_nvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    published: list[list[dict]] = []
    poller = TelemetryPoller(published.append, interval=0.01)
    poller.start()
    assert poller._thread is None
    poller.stop()
    assert published == []


class _FixedReadings(GpuTelemetry):
    """Stands in for a GPU host: NVML cannot run here, the poller's loop still can."""

    def __init__(self) -> None:  # no NVML session
        super().__init__()
        self.readings = [{"ordinal": 0, "name": "test", "util_pct": 50, "mem_used_bytes": 1,
                          "mem_total_bytes": 2, "temp_c": 40, "power_w": 100.0}]

    @property
    def available(self) -> bool:
        return True

    def poll(self) -> list[dict]:
        return self.readings


def test_poller_publishes_repeatedly_until_stopped():
    got = threading.Event()
    published: list[list[dict]] = []

    def publish(gpus: list[dict]) -> None:
        published.append(gpus)
        if len(published) >= 3:
            got.set()

    poller = TelemetryPoller(publish, interval=0.01, telemetry=_FixedReadings())
    poller.start()
    assert got.wait(5)
    poller.stop()
    count = len(published)
    assert all(set(g[0]) == KEYS for g in published)
    assert poller._thread is None and len(published) == count


def test_a_failing_publish_does_not_stop_the_poller():
    calls = []

    def publish(gpus: list[dict]) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("tracker gone")

    poller = TelemetryPoller(publish, interval=0.01, telemetry=_FixedReadings())
    poller.start()
    for _ in range(500):
        if len(calls) >= 2:
            break
        threading.Event().wait(0.01)
    poller.stop()
    assert len(calls) >= 2


@pytest.mark.gpu
def test_gpu_host_has_telemetry():
    t = GpuTelemetry()
    if not t.available:
        pytest.skip("no NVML GPU on this machine")
    assert t.poll()[0]["name"]
    t.close()
