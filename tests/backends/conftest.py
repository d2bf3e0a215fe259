"""The backend tests; the GPU ones share one CudaBackend per test module."""
from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def cuda() -> Iterator[object]:
    """A CudaBackend on device 0, living in the test thread, closed at the end of the module.

    Only GPU tests request it, and they are skipped (by `requires_gpu`) before it is built without one."""
    from gpu_engine.backends.cuda import CudaBackend

    backend = CudaBackend(0)
    yield backend
    backend.close()
