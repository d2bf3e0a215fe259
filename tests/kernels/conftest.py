"""The kernel tests: the CUDA sources compiled for sm_80/sm_90, and their host build checked against
the Python reference (field and point helpers in `tests.kernels.emulation`)."""
from __future__ import annotations

import pytest

from gpu_engine.backends.emulation import EmulatedBackend


@pytest.fixture(scope="module")
def emu() -> EmulatedBackend:
    """The backend over the host build of the kernels, one per test module."""
    return EmulatedBackend()
