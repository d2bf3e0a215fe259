"""The CUDA backend: NTT family and G1 MSM on an NVIDIA GPU through PyCUDA.

One `CudaBackend` per GPU worker thread, created and closed in that thread: it retains
the device's primary context and keeps it pushed for its whole life (a context is bound
to the thread that made it current; `pycuda.autoinit` is never used). Kernels are
compiled once per process and GPU architecture, with nvcc's cache in the data directory.
The launch recipes live in `device_plan.py` (shared with the host emulation). The G2
MSM stays on the CPU backend, as the split-proving tail does.
"""
from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gpu_engine.backends.errors import GPU_EXTRA_HINT, BackendUnavailable, DeviceError
from gpu_engine.backends.device_plan import MsmPlan, NttPlan

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
MODULES = ("ntt.cu", "msm.cu")
DEFAULT_BLOCK = 256
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)

_cubins: dict[tuple[str, str], bytes] = {}
_cubin_lock = threading.Lock()


def _import_pycuda():
    try:
        import pycuda.compiler as compiler
        import pycuda.driver as drv
    except (ImportError, OSError) as exc:
        raise BackendUnavailable(f"the CUDA backend needs PyCUDA ({exc}); {GPU_EXTRA_HINT}") from exc
    return drv, compiler


def kernel_source(name: str, _seen: set[str] | None = None) -> str:
    """The .cu file with its local headers inlined (once each), so that the compiler
    cache's key covers the headers too."""
    seen = set() if _seen is None else _seen
    text = (KERNEL_DIR / name).read_text()

    def expand(match: re.Match) -> str:
        header = match.group(1)
        if header in seen:
            return ""
        seen.add(header)
        return kernel_source(header, seen)

    return _INCLUDE.sub(expand, text)


def _cache_dir() -> str | None:
    try:
        from django.conf import settings

        path = Path(settings.DATA_DIR) / "cuda-cache"
    except Exception:  # noqa: BLE001 - outside Django (a bench script) there is no cache dir setting
        return None
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def compiled_module(compiler: Any, name: str, arch: str) -> bytes:
    """The cubin of kernels/<name> for `arch`, compiled at most once per process."""
    key = (name, arch)
    with _cubin_lock:
        if key not in _cubins:
            _cubins[key] = compiler.compile(
                kernel_source(name), no_extern_c=True, arch=arch, cache_dir=_cache_dir()
            )
        return _cubins[key]


class CudaOps:
    """KernelOps on one device: cached allocations, a private stream, pinned staging."""

    def __init__(self, drv: Any, modules: Sequence[Any]) -> None:
        self.drv = drv
        self.stream = drv.Stream()
        self._functions: dict[str, Any] = {}
        self._modules = list(modules)
        self._buffers: dict[str, Any] = {}
        self._sizes: dict[str, int] = {}
        self._pinned: np.ndarray | None = None

    def _function(self, name: str) -> Any:
        fn = self._functions.get(name)
        if fn is None:
            for module in self._modules:
                try:
                    fn = module.get_function(name)
                    break
                except self.drv.LogicError:
                    continue
            if fn is None:
                raise KeyError(f"no kernel named {name}")
            self._functions[name] = fn
        return fn

    def buffer(self, tag: str, nbytes: int) -> Any:
        nbytes = max(4, nbytes)
        if self._sizes.get(tag) != nbytes:
            self.release(tag)
            self._buffers[tag] = self.drv.mem_alloc(nbytes)
            self._sizes[tag] = nbytes
        return self._buffers[tag]

    def release(self, tag: str) -> None:
        buf = self._buffers.pop(tag, None)
        self._sizes.pop(tag, None)
        if buf is not None:
            buf.free()

    def release_all(self) -> None:
        for tag in list(self._buffers):
            self.release(tag)
        self._pinned = None

    def _staging(self, words: int) -> np.ndarray:
        """A view of one page-locked buffer, grown to the largest transfer seen."""
        if self._pinned is None or self._pinned.size < words:
            self._pinned = None
            self._pinned = self.drv.pagelocked_empty(1 << max(10, (words - 1).bit_length()), dtype=np.uint32)
        return self._pinned[:words]

    def upload(self, buf: Any, data: np.ndarray) -> None:
        flat = np.ascontiguousarray(data, dtype=np.uint32).ravel()
        staging = self._staging(flat.size)
        staging[:] = flat
        self.drv.memcpy_htod_async(buf, staging, self.stream)
        self.stream.synchronize()  # the staging buffer is reused by the next upload

    def download(self, buf: Any, nbytes: int) -> np.ndarray:
        staging = self._staging(nbytes // 4)
        self.drv.memcpy_dtoh_async(staging, buf, self.stream)
        self.stream.synchronize()
        return staging.copy()

    def copy(self, dst: Any, src: Any, nbytes: int) -> None:
        self.drv.memcpy_dtod_async(dst, src, nbytes, self.stream)

    def zero(self, buf: Any, nbytes: int) -> None:
        self.drv.memset_d32_async(buf, 0, nbytes // 4, self.stream)

    def launch(self, name: str, count: int, *args: Any, block: int | None = None) -> None:
        block = block or DEFAULT_BLOCK
        grid = max(1, -(-count // block))
        cargs = [np.uint32(a) if isinstance(a, int) else a for a in args]
        self._function(name)(*cargs, block=(block, 1, 1), grid=(grid, 1), stream=self.stream)

    def synchronize(self) -> None:
        self.stream.synchronize()


class CudaBackend:
    """Backend protocol on GPU `gpu_ordinal`; create, use and close it in one thread."""

    name = "cuda"

    def __init__(self, gpu_ordinal: int = 0, *, window: int | None = None) -> None:
        self.drv, compiler = _import_pycuda()
        self.gpu_ordinal = gpu_ordinal
        self._thread = threading.get_ident()
        self._ctx = None
        self._cpu = None
        with self._errors("opening the device"):
            self.drv.init()
            count = self.drv.Device.count()
            if not 0 <= gpu_ordinal < count:
                raise BackendUnavailable(f"GPU ordinal {gpu_ordinal} not present; this machine has {count} GPU(s)")
            device = self.drv.Device(gpu_ordinal)
            self.device_name = device.name()
            major, minor = device.compute_capability()
            self.arch = f"sm_{major}{minor}"
            self._ctx = device.retain_primary_context()
            self._ctx.push()
            try:
                modules = [self.drv.module_from_buffer(compiled_module(compiler, m, self.arch)) for m in MODULES]
                self.ops = CudaOps(self.drv, modules)
            except BaseException:
                self._drop_context()
                raise
        self._ntt = NttPlan(self.ops)
        self._msm = MsmPlan(self.ops, window=window)

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Turn driver errors into DeviceError; after an OOM the cached buffers are dropped."""
        try:
            yield
        except BackendUnavailable:
            raise
        except Exception as exc:
            drv = self.drv
            if not isinstance(exc, (drv.Error, getattr(drv, "CompileError", drv.Error))):
                raise
            oom = isinstance(exc, drv.MemoryError) or "out of memory" in str(exc).lower()
            if oom:
                self._free_device_memory()
            kind = "out of device memory" if oom else "CUDA error"
            raise DeviceError(
                f"GPU {self.gpu_ordinal}: {kind} while {what}: {exc}", out_of_memory=oom, gpu_ordinal=self.gpu_ordinal
            ) from exc

    def _free_device_memory(self) -> None:
        """Free every cached buffer, and forget the tables and bases that lived in them."""
        for plan in (getattr(self, "_ntt", None), getattr(self, "_msm", None)):
            if plan is not None:
                plan.forget()
        if getattr(self, "ops", None) is not None:
            with contextlib.suppress(Exception):
                self.ops.release_all()

    def _check_thread(self) -> None:
        if threading.get_ident() != self._thread:
            raise RuntimeError("a CudaBackend is bound to the thread that created it "
                               "(its CUDA context is current there)")

    def ntt(self, values: Sequence[int], *, inverse: bool = False, coset: bool = False) -> list[int]:
        self._check_thread()
        with self._errors(f"running an NTT of {len(values)}"):
            return self._ntt.ntt(values, inverse=inverse, coset=coset)

    def compute_h(self, a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
        self._check_thread()
        with self._errors(f"computing H over {len(a)} points"):
            return self._ntt.compute_h(a, b, c)

    def compute_h_odd_coset(self, a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
        """snarkjs's H for circom keys: six NTTs with ffjavascript's roots, on the device."""
        self._check_thread()
        with self._errors(f"computing the odd-coset H over {len(a)} points"):
            return self._ntt.compute_h_odd_coset(a, b, c)

    def msm_g1(self, points: Sequence[Any], scalars: Sequence[int], *, bases_key: str | None = None):
        self._check_thread()
        with self._errors(f"running a G1 MSM of {len(points)}"):
            return self._msm.msm_g1(points, scalars, bases_key=bases_key)

    def msm_g2(self, points: Sequence[Any], scalars: Sequence[int], *, bases_key: str | None = None):
        """G2 stays on the CPU (the split-proving tail), as in the CPU backend."""
        if self._cpu is None:
            from gpu_engine.backends.cpu import CpuBackend

            self._cpu = CpuBackend()
        return self._cpu.msm_g2(points, scalars, bases_key=bases_key)

    def synchronize(self) -> None:
        self._check_thread()
        with self._errors("synchronizing"):
            self.ops.synchronize()

    def _drop_context(self) -> None:
        if self._ctx is not None:
            with contextlib.suppress(Exception):
                self.drv.Context.pop()
            with contextlib.suppress(Exception):
                self._ctx.detach()
            self._ctx = None

    def close(self) -> None:
        """Free device memory and release the context; call from the owning thread."""
        if self._ctx is None:
            return
        self._check_thread()
        self._free_device_memory()  # a faulted context cannot free; detaching still releases it
        self._drop_context()
