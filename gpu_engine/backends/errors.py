"""The errors a backend raises, apart from selection so that every backend module can import them."""
from __future__ import annotations

GPU_EXTRA_HINT = "install the GPU extra: pip install -e '.[gpu]' (needs the CUDA toolkit and an NVIDIA driver)"


class BackendUnavailable(ValueError):
    """The requested backend cannot run on this machine; the message says why."""


class DeviceError(RuntimeError):
    """A CUDA failure in a backend call. The engine marks the worker `error`, requeues the
    partition and rebuilds the backend; `out_of_memory` tells a full device from a fault."""

    def __init__(self, message: str, *, out_of_memory: bool = False, gpu_ordinal: int | None = None) -> None:
        super().__init__(message)
        self.out_of_memory = out_of_memory
        self.gpu_ordinal = gpu_ordinal
