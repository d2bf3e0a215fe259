"""`--backend auto|cpu|cuda`: what gets used, and a clear error when CUDA cannot run."""
from __future__ import annotations

import sys

import pytest

from gpu_engine import backends
from gpu_engine.backends.cpu import CpuBackend

HAVE_GPU = backends.device_count() > 0


def test_cpu_is_always_available():
    assert backends.select_backend("cpu") == "cpu"
    assert isinstance(backends.create_backend("cpu"), CpuBackend)


def test_unknown_backend_names_the_choices():
    with pytest.raises(ValueError, match="auto, cpu, cuda"):
        backends.select_backend("opencl")
    with pytest.raises(ValueError, match="auto, cpu, cuda"):
        backends.create_backend("opencl")


@pytest.mark.skipif(HAVE_GPU, reason="this machine has a GPU")
def test_auto_falls_back_to_cpu_without_a_device():
    assert backends.device_count() == 0
    assert backends.select_backend("auto") == "cpu"
    assert isinstance(backends.create_backend("auto"), CpuBackend)


@pytest.mark.skipif(HAVE_GPU, reason="this machine has a GPU")
def test_cuda_without_a_device_is_a_clear_error():
    with pytest.raises(backends.BackendUnavailable, match="--backend cuda is unavailable") as info:
        backends.select_backend("cuda")
    assert isinstance(info.value, ValueError)
    assert backends.cuda_unavailable_reason() in str(info.value)


def test_missing_pycuda_names_the_gpu_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda", None)  # import pycuda -> ImportError
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    assert backends.device_count() == 0
    assert "'.[gpu]'" in backends.cuda_unavailable_reason()
    assert backends.select_backend("auto") == "cpu"
    with pytest.raises(backends.BackendUnavailable, match=r"\.\[gpu\]"):
        backends.select_backend("cuda")
    with pytest.raises(backends.BackendUnavailable, match=r"\.\[gpu\]"):
        backends.create_backend("cuda")


def test_device_error_carries_out_of_memory():
    err = backends.DeviceError("GPU 0: out of device memory", out_of_memory=True, gpu_ordinal=0)
    assert err.out_of_memory and err.gpu_ordinal == 0 and isinstance(err, RuntimeError)
    assert not backends.DeviceError("launch failed").out_of_memory


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="needs an NVIDIA GPU with PyCUDA")
def test_auto_picks_cuda_with_a_device():
    assert backends.select_backend("auto") == "cuda"
    assert backends.select_backend("cuda") == "cuda"
