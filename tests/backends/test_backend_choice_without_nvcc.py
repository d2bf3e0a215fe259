"""A host with a driver and a GPU but no CUDA toolkit: `--backend auto` falls back to the CPU with one
clear line, `--backend cuda` refuses with the reason (PyCUDA compiles the kernels with nvcc)."""
from __future__ import annotations

import logging
import shutil

import pytest

from gpu_engine import backends
from tests.backends.fake_pycuda import FakeGpu, install


@pytest.fixture
def driver_without_nvcc(monkeypatch) -> FakeGpu:
    gpu = FakeGpu()
    install(monkeypatch, gpu)
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda cmd, *a, **k: None if cmd == "nvcc" else real(cmd, *a, **k))
    return gpu


def test_auto_falls_back_to_cpu_with_one_line(driver_without_nvcc, caplog):
    assert backends.device_count() == 1
    with caplog.at_level(logging.INFO, logger="gpu_engine.backends"):
        assert backends.select_backend("auto") == "cpu"
    lines = [r for r in caplog.records if r.name == "gpu_engine.backends"]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    assert "--backend auto: using the CPU backend" in lines[0].getMessage() and "nvcc" in lines[0].getMessage()


def test_cuda_refuses_with_the_reason(driver_without_nvcc):
    with pytest.raises(backends.BackendUnavailable, match="--backend cuda is unavailable: the CUDA toolkit's nvcc"):
        backends.select_backend("cuda")


def test_with_nvcc_the_driver_is_chosen(monkeypatch):
    install(monkeypatch, FakeGpu())
    if shutil.which("nvcc") is None:
        pytest.fail("nvcc not found: install the CUDA toolkit")
    assert backends.cuda_unavailable_reason() is None
    assert backends.select_backend("auto") == "cuda"


def test_the_cli_resolves_auto_to_cpu_there(driver_without_nvcc):
    from gpu_engine.console import cli

    assert cli.resolve_devices("auto", "auto") == ("cpu", [0])
    with pytest.raises(backends.BackendUnavailable, match="nvcc"):
        cli.resolve_devices("cuda", "auto")
