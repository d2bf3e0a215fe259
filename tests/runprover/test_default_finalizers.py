"""Finalizer threads by default: a quarter of the cores with the CUDA backend (there the CPU tail is the
slow stage: on an H200 one finalizer settled about 6 partitions a second while the device part took
44 ms), one with the CPU backend; `--finalizers N` overrides either."""
from __future__ import annotations

import pytest

from gpu_engine.engine.proving import default_finalizers


@pytest.mark.parametrize("backend, cpus, expected", [
    ("cuda", 16, 4), ("cuda", 64, 16), ("cuda", 4, 1), ("cuda", 2, 1), ("cuda", 1, 1),
    ("cpu", 16, 1), ("cpu", 2, 1),
])
def test_default_finalizers_follow_the_backend_and_the_cores(backend, cpus, expected):
    assert default_finalizers(backend, cpus) == expected


def test_default_finalizers_read_this_machines_cores(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 32)
    assert default_finalizers("cuda") == 8
    monkeypatch.setattr("os.cpu_count", lambda: None)  # unknown: as on a small machine
    assert default_finalizers("cuda") == 1
