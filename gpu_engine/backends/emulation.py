"""Host build of the CUDA kernels' per-element code, loaded with ctypes.

The field, point, NTT and MSM bodies in kernels/*.cuh are `__host__ __device__`; built
as C++ for the host they run the same arithmetic as on the GPU. `HostOps` executes the
launch recipes of device_plan.py with that library, so the recipes and the arithmetic
are checked on machines without a GPU. Slow (one core, serial loops): small sizes only.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gpu_engine.backends import launch as launch_rules
from gpu_engine.backends.device_plan import MsmPlan, NttPlan

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
SOURCE = KERNEL_DIR / "host_emulation.cu"
DEFAULT_BUILD_DIR = Path(__file__).resolve().parents[2] / "build" / "emulation"
POISON = 0xA5A5A5A5  # what a new buffer holds: large as a count, not a valid field element

_lock = threading.Lock()
_loaded: dict[Path, ctypes.CDLL] = {}


class EmulationBuildError(RuntimeError):
    """No host compiler, or the kernel headers failed to compile for the host."""


class EmulatedFault(RuntimeError):
    """A host kernel saw an index out of its buffer: on a GPU, an illegal address or silent garbage."""


def _source_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(KERNEL_DIR.glob("*.cu*")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def compile_command(compiler: str, output: Path) -> list[str]:
    """g++ builds the headers as plain C++; nvcc builds them as CUDA host code."""
    if Path(compiler).name.startswith("nvcc"):
        return [compiler, "-x", "cu", "-O2", "--compiler-options", "-fPIC", "-shared", "-o", str(output), str(SOURCE)]
    return [compiler, "-x", "c++", "-std=c++14", "-O2", "-fPIC", "-shared", "-o", str(output), str(SOURCE)]


def build_library(compiler: str | None = None, build_dir: Path | None = None) -> Path:
    """Compile host_emulation.cu once per source digest and compiler; returns the .so path."""
    compiler = compiler or os.environ.get("VASTMANAGER_HOST_CXX") or "g++"
    exe = shutil.which(compiler)
    if exe is None:
        raise EmulationBuildError(f"host compiler {compiler!r} not found on PATH (needed for the emulation build)")
    build_dir = Path(build_dir or DEFAULT_BUILD_DIR)
    out = build_dir / f"libvm_host-{Path(compiler).name}-{_source_digest()}.so"
    if out.exists():
        return out
    build_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(suffix=".so", dir=build_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    proc = subprocess.run(compile_command(exe, tmp), capture_output=True, text=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise EmulationBuildError(f"{compiler} failed on {SOURCE.name}:\n{proc.stderr[-4000:]}")
    os.replace(tmp, out)  # atomic: concurrent builders end with one complete file
    return out


def load_library(compiler: str | None = None) -> ctypes.CDLL:
    path = build_library(compiler)
    with _lock:
        if path not in _loaded:
            _loaded[path] = ctypes.CDLL(str(path))
        return _loaded[path]


def _ptr(arr: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(arr.ctypes.data)


class HostOps:
    """KernelOps on host memory: buffers are uint32 numpy arrays, launches are ctypes calls."""

    def __init__(self, lib: ctypes.CDLL | None = None, *, fill: int = POISON) -> None:
        self.lib = lib or load_library()
        self.fill = fill
        self._buffers: dict[str, np.ndarray] = {}
        self.launches: list[str] = []
        self.lib.vm_take_faults.restype = ctypes.c_uint32
        self.lib.vm_take_faults()

    def buffer(self, tag: str, nbytes: int) -> np.ndarray:
        words = -(-max(4, nbytes) // 4)
        buf = self._buffers.get(tag)
        if buf is None or buf.size != words:
            buf = np.full(words, self.fill, dtype=np.uint32)
            self._buffers[tag] = buf
        return buf

    def release(self, tag: str) -> None:
        self._buffers.pop(tag, None)

    def upload(self, buf: np.ndarray, data: np.ndarray) -> None:
        flat = np.ascontiguousarray(data, dtype=np.uint32).ravel()
        if flat.size > buf.size:
            raise ValueError(f"upload of {flat.size} words into a buffer of {buf.size}")
        buf[: flat.size] = flat

    def download(self, buf: np.ndarray, nbytes: int) -> np.ndarray:
        return buf[: nbytes // 4].copy()

    def copy(self, dst: np.ndarray, src: np.ndarray, nbytes: int) -> None:
        dst[: nbytes // 4] = src[: nbytes // 4]

    def zero(self, buf: np.ndarray, nbytes: int) -> None:
        buf[: nbytes // 4] = 0

    def synchronize(self) -> None:
        """Host launches are synchronous."""

    def launch(self, name: str, count: int, *args: Any, block: int | None = None) -> None:
        grid, block = launch_rules.geometry(name, count, block)
        launch_rules.check(name, grid, block, args, lambda a: isinstance(a, np.ndarray))
        self.launches.append(name)
        cargs = [_ptr(a) if isinstance(a, np.ndarray) else ctypes.c_uint32(int(a)) for a in args]
        getattr(self.lib, name)(*cargs)
        faults = self.lib.vm_take_faults()
        if faults:
            raise EmulatedFault(f"{name}: {faults} access(es) out of range; on a GPU an illegal address or "
                                "garbage (did the recipe read memory it never wrote?)")


class EmulatedBackend:
    """The NTT family and the G1 MSM of the CUDA backend, run by the host build."""

    name = "emulation"
    device_name = "host emulation"
    arch = "host"

    def __init__(self, *, window: int | None = None, split: bool = True, fill: int = POISON) -> None:
        self.ops = HostOps(fill=fill)
        self._ntt = NttPlan(self.ops)
        self._msm = MsmPlan(self.ops, window=window, split=split)

    def ntt(self, values: Sequence[int], *, inverse: bool = False, coset: bool = False) -> list[int]:
        return self._ntt.ntt(values, inverse=inverse, coset=coset)

    def compute_h(self, a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
        return self._ntt.compute_h(a, b, c)

    def compute_h_odd_coset(self, a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
        return self._ntt.compute_h_odd_coset(a, b, c)

    def msm_g1(self, points: Sequence[Any], scalars: Sequence[int], *, bases_key: str | None = None):
        return self._msm.msm_g1(points, scalars, bases_key=bases_key)

    def close(self) -> None:
        self.ops._buffers.clear()  # noqa: SLF001 - the emulated ops' buffer pool belongs to this backend
