"""Backend selection: the CPU backend everywhere, the CUDA backend where PyCUDA and a GPU are.

PyCUDA is the optional `[gpu]` extra and is imported only when a GPU is asked about, so
the CPU path never needs it (nor the CUDA toolkit or driver).
"""
from __future__ import annotations

import logging
import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpu_engine.backends.base import Backend

from gpu_engine.backends.errors import GPU_EXTRA_HINT, BackendUnavailable, DeviceError

__all__ = ["BACKEND_NAMES", "GPU_EXTRA_HINT", "BackendUnavailable", "DeviceError", "create_backend", "device_count",
           "select_backend"]

BACKEND_NAMES = ("auto", "cpu", "cuda")
log = logging.getLogger("gpu_engine.backends")


def nvcc_missing_reason() -> str | None:
    """None when nvcc is on PATH (PyCUDA compiles the kernels with it, even for its cache key)."""
    if shutil.which("nvcc"):
        return None
    hint = " (it is in /usr/local/cuda/bin: add that to PATH)" if shutil.which("nvcc", path="/usr/local/cuda/bin") \
        else ""
    return f"the CUDA toolkit's nvcc is not on PATH{hint}; PyCUDA needs it to compile the kernels"


def cuda_unavailable_reason() -> str | None:
    """None when PyCUDA imports, sees at least one device and can compile (nvcc), else why not."""
    try:
        import pycuda.driver as drv
    except (ImportError, OSError) as exc:
        return f"PyCUDA is not importable ({exc}); {GPU_EXTRA_HINT}"
    try:
        drv.init()
        count = drv.Device.count()
    except Exception as exc:  # noqa: BLE001 - any driver failure means "no usable device"
        return f"the CUDA driver did not initialise ({exc}); is an NVIDIA driver installed?"
    if count == 0:
        return "the CUDA driver reports no GPU"
    return nvcc_missing_reason()


def device_count() -> int:
    """Number of CUDA devices; 0 without PyCUDA or a driver."""
    try:
        import pycuda.driver as drv

        drv.init()
        return int(drv.Device.count())
    except Exception:  # noqa: BLE001 - ImportError, OSError, or a driver error: no devices
        return 0


def select_backend(requested: str) -> str:
    """The backend actually used for `requested` ('auto' | 'cpu' | 'cuda')."""
    if requested not in BACKEND_NAMES:
        raise ValueError(f"unknown backend {requested!r}; choose one of {', '.join(BACKEND_NAMES)}")
    if requested == "cpu":
        return "cpu"
    reason = cuda_unavailable_reason()
    if reason is None:
        return "cuda"
    if requested == "cuda":
        raise BackendUnavailable(f"--backend cuda is unavailable: {reason}")
    log.warning("--backend auto: using the CPU backend, CUDA is unavailable: %s", reason)
    return "cpu"


def create_backend(name: str, gpu_ordinal: int = 0) -> Backend:
    """A new backend instance; a CUDA one must be created in the thread that will use it."""
    if name == "auto":
        name = select_backend(name)
    if name == "cpu":
        from gpu_engine.backends.cpu import CpuBackend

        return CpuBackend()
    if name == "cuda":
        from gpu_engine.backends.cuda import CudaBackend

        return CudaBackend(gpu_ordinal)
    raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKEND_NAMES)}")
