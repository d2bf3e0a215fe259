"""The CUDA backend: NTT family and G1 MSM on an NVIDIA GPU through PyCUDA.

One `CudaBackend` per GPU worker thread, created and closed in that thread: it retains
the device's primary context and keeps it pushed for its whole life (a context is bound
to the thread that made it current; `pycuda.autoinit` is never used). Kernels are
compiled once per process and GPU architecture, with nvcc's cache in the data directory,
and every kernel is looked up when the backend opens. The launch recipes live in
`device_plan.py` (shared with the host emulation) and every launch passes `launch.check`.
Memory is planned in bytes against this worker's share of the device (`cuda_devices`);
a fault in the shared context makes every backend on that device rebuild before its next
call. The G2 MSM stays on the CPU backend, as the split-proving tail does.
"""
from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gpu_engine.backends import cuda_devices
from gpu_engine.backends import launch as launch_rules
from gpu_engine.backends.device_plan import MsmPlan, NttPlan
from gpu_engine.backends.errors import GPU_EXTRA_HINT, BackendUnavailable, DeviceError
from gpu_engine.backends.launch import DEFAULT_BLOCK, FIXED_BLOCK_KERNELS  # noqa: F401 - used by gpucheck

if TYPE_CHECKING:
    from gpu_engine.backends.cpu import CpuBackend

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
MODULES = ("ntt.cu", "msm.cu")
STAGING_LIMIT = 64 * 2**20  # the most page-locked host memory a worker pins; larger transfers go in pieces
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)
_PRAGMA_ONCE = re.compile(r'^\s*#\s*pragma\s+once\s*$', re.M)
_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(')

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
    cache's key covers the headers too. Their `#pragma once` goes: inlined, it only makes nvcc
    warn ("#pragma once in main file"), and PyCUDA turns every compiler word into a warning."""
    seen = set() if _seen is None else _seen
    text = _PRAGMA_ONCE.sub("", (KERNEL_DIR / name).read_text())

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


def kernel_names(name: str) -> tuple[str, ...]:
    """The `extern "C" __global__` kernels defined in kernels/<name>, in source order."""
    return tuple(_KERNEL.findall(kernel_source(name)))


def compiled_module(compiler: Any, name: str, arch: str) -> bytes:
    """The cubin of kernels/<name> for `arch` (memoized by `load_modules` once it loaded)."""
    key = (name, arch)
    with _cubin_lock:
        cached = _cubins.get(key)
    if cached is not None:
        return cached
    return compiler.compile(kernel_source(name), no_extern_c=True, arch=arch, cache_dir=_cache_dir())


def load_modules(drv: Any, compiler: Any, arch: str) -> dict[str, Any]:
    """Every kernel of every module, looked up once: a cubin is memoized only after the driver
    loaded it (a bad one is compiled again next time), and a kernel missing from its module is a
    BackendUnavailable here, never a KeyError in the middle of a proof."""
    functions: dict[str, Any] = {}
    for name in MODULES:
        cubin = compiled_module(compiler, name, arch)
        module = drv.module_from_buffer(cubin)
        for kernel in kernel_names(name):
            try:
                functions[kernel] = module.get_function(kernel)
            except drv.LogicError as exc:
                if "not found" not in str(exc):
                    raise  # a faulted context says LogicError too (PyCUDA maps an illegal address there)
                raise BackendUnavailable(f"kernel {kernel} is missing from the {name} module for {arch}: {exc}") \
                    from exc
        with _cubin_lock:
            _cubins[(name, arch)] = cubin
    return functions


class CudaOps:
    """KernelOps on one device: cached allocations, a private stream, pinned staging of the exact
    size a transfer needs (at most STAGING_LIMIT; larger transfers go through it in pieces)."""

    def __init__(self, drv: Any, functions: dict[str, Any]) -> None:
        self.drv = drv
        self.stream = drv.Stream()
        self._functions = functions
        self._buffers: dict[str, Any] = {}
        self._sizes: dict[str, int] = {}
        self._pinned: np.ndarray | None = None
        self.held_bytes = 0  # read by other workers' budgets: a plain int, updated in this thread

    def buffer(self, tag: str, nbytes: int) -> Any:
        nbytes = max(4, nbytes)
        if self._sizes.get(tag) != nbytes:
            self.release(tag)
            self._buffers[tag] = self.drv.mem_alloc(nbytes)
            self._sizes[tag] = nbytes
            self.held_bytes += nbytes
        return self._buffers[tag]

    def release(self, tag: str) -> None:
        buf = self._buffers.pop(tag, None)
        self.held_bytes -= self._sizes.pop(tag, 0)
        if buf is not None:
            buf.free()

    def release_all(self) -> list[str]:
        """Free every buffer and the pinned staging; returns the tags whose free failed (a faulted
        context may refuse some: the others are still freed, and the context's end frees the rest)."""
        failed = []
        for tag in list(self._buffers):
            try:
                self.release(tag)
            except Exception:  # noqa: BLE001 - keep freeing the others
                failed.append(tag)
        pinned, self._pinned = self._pinned, None
        free = getattr(getattr(pinned, "base", None), "free", None)
        if free is not None:
            try:
                free()
            except Exception:  # noqa: BLE001 - the allocation dies with the context anyway
                failed.append("pinned")
        return failed

    def _staging(self, words: int) -> np.ndarray:
        """A view of the page-locked buffer, reallocated at exactly the size needed when it grows."""
        words = min(words, STAGING_LIMIT // 4)
        if self._pinned is None or self._pinned.size < words:
            old, self._pinned = self._pinned, None
            free = getattr(getattr(old, "base", None), "free", None)
            if free is not None:
                free()
            self._pinned = self.drv.pagelocked_empty(words, dtype=np.uint32)
        return self._pinned[:words]

    def upload(self, buf: Any, data: np.ndarray) -> None:
        flat = np.ascontiguousarray(data, dtype=np.uint32).ravel()
        staging = self._staging(flat.size)
        for start in range(0, flat.size, staging.size):
            piece = flat[start:start + staging.size]
            staging[:piece.size] = piece
            self.drv.memcpy_htod_async(int(buf) + 4 * start, staging[:piece.size], self.stream)
            self.stream.synchronize()  # the staging buffer is reused by the next piece

    def download(self, buf: Any, nbytes: int) -> np.ndarray:
        words = nbytes // 4
        out = np.empty(words, dtype=np.uint32)
        staging = self._staging(words)
        for start in range(0, words, max(1, staging.size)):
            size = min(staging.size, words - start)
            self.drv.memcpy_dtoh_async(staging[:size], int(buf) + 4 * start, self.stream)
            self.stream.synchronize()
            out[start:start + size] = staging[:size]
        return out

    def copy(self, dst: Any, src: Any, nbytes: int) -> None:
        self.drv.memcpy_dtod_async(dst, src, nbytes, self.stream)

    def zero(self, buf: Any, nbytes: int) -> None:
        self.drv.memset_d32_async(buf, 0, nbytes // 4, self.stream)

    def launch(self, name: str, count: int, *args: Any, block: int | None = None) -> None:
        grid, block = launch_rules.geometry(name, count, block)
        launch_rules.check(name, grid, block, args, lambda a: isinstance(a, self.drv.DeviceAllocation))
        cargs = [np.uint32(a) if isinstance(a, (int, np.uint32)) else a for a in args]
        self._functions[name](*cargs, block=(block, 1, 1), grid=(grid, 1), stream=self.stream)

    def synchronize(self) -> None:
        self.stream.synchronize()


class CudaBackend:
    """Backend protocol on GPU `gpu_ordinal`; create, use and close it in one thread."""

    name = "cuda"

    def __init__(self, gpu_ordinal: int = 0, *, window: int | None = None) -> None:
        self.drv, self._compiler = _import_pycuda()
        self.gpu_ordinal = gpu_ordinal
        self.window = window
        self._thread = threading.get_ident()
        self._ctx: Any = None  # PyCUDA's context (the library is untyped)
        self._cpu: CpuBackend | None = None
        self.ops: CudaOps | None = None
        self._open()

    def _open(self) -> None:
        """Retain a sound primary context, load every kernel, build the plans."""
        try:
            self._generation = cuda_devices.join(self.gpu_ordinal, self)
        except TimeoutError as exc:
            raise DeviceError(f"GPU {self.gpu_ordinal}: {exc}", gpu_ordinal=self.gpu_ordinal) from exc
        try:
            with self._errors("opening the device", mark_fault=False):
                self.drv.init()
                count = self.drv.Device.count()
                if not 0 <= self.gpu_ordinal < count:
                    raise BackendUnavailable(f"GPU ordinal {self.gpu_ordinal} not present; "
                                             f"this machine has {count} GPU(s)")
                device = self.drv.Device(self.gpu_ordinal)
                self.device_name = device.name()
                major, minor = device.compute_capability()
                self.arch = f"sm_{major}{minor}"
                self._ctx = device.retain_primary_context()
                self._ctx.push()
                self.ops = CudaOps(self.drv, load_modules(self.drv, self._compiler, self.arch))
        except BaseException:
            self._drop_context()
            cuda_devices.leave(self.gpu_ordinal, self)
            raise
        self._ntt = NttPlan(self.ops, budget=self._budget)
        self._msm = MsmPlan(self.ops, window=self.window, budget=self._budget)

    def _budget(self) -> int:
        free, _total = self.drv.mem_get_info()
        return cuda_devices.share_bytes(self.gpu_ordinal, int(free))

    @contextlib.contextmanager
    def _errors(self, what: str, *, mark_fault: bool = True) -> Iterator[None]:
        """Turn driver errors into DeviceError. After an OOM the cached buffers are dropped; any
        other driver error is taken as a fault of the shared context: every backend on the device
        rebuilds (this one too, if it is used again)."""
        try:
            yield
        except (BackendUnavailable, DeviceError):
            raise
        except Exception as exc:
            drv = self.drv
            if not isinstance(exc, (drv.Error, getattr(drv, "CompileError", drv.Error))):
                raise
            oom = isinstance(exc, drv.MemoryError) or "out of memory" in str(exc).lower()
            if oom:
                self._free_device_memory()
            elif mark_fault:
                cuda_devices.fault(self.gpu_ordinal, self._generation)
            kind = "out of device memory" if oom else "CUDA error"
            raise DeviceError(
                f"GPU {self.gpu_ordinal}: {kind} while {what}: {exc}", out_of_memory=oom, gpu_ordinal=self.gpu_ordinal
            ) from exc

    def _free_device_memory(self) -> list[str]:
        """Free every cached buffer, and forget the tables and bases that lived in them."""
        for plan in (getattr(self, "_ntt", None), getattr(self, "_msm", None)):
            if plan is not None:
                plan.forget()
        return self.ops.release_all() if self.ops is not None else []

    def _ready(self) -> None:
        """Checks before a call: the owning thread, and a context no fault has spoiled (else the
        backend rebuilds itself first: its tables and bases lived in the faulted context)."""
        if threading.get_ident() != self._thread:
            raise RuntimeError("a CudaBackend is bound to the thread that created it "
                               "(its CUDA context is current there)")
        if self._ctx is None or cuda_devices.is_stale(self.gpu_ordinal, self._generation):
            self._release()
            self._open()

    def ntt(self, values: Sequence[int], *, inverse: bool = False, coset: bool = False) -> list[int]:
        self._ready()
        with self._errors(f"running an NTT of {len(values)}"):
            return self._ntt.ntt(values, inverse=inverse, coset=coset)

    def compute_h(self, a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
        self._ready()
        with self._errors(f"computing H over {len(a)} points"):
            return self._ntt.compute_h(a, b, c)

    def compute_h_odd_coset(self, a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
        """snarkjs's H for circom keys: six NTTs with ffjavascript's roots, on the device."""
        self._ready()
        with self._errors(f"computing the odd-coset H over {len(a)} points"):
            return self._ntt.compute_h_odd_coset(a, b, c)

    def msm_g1(self, points: Sequence[Any], scalars: Sequence[int], *, bases_key: str | None = None):
        self._ready()
        with self._errors(f"running a G1 MSM of {len(points)}"):
            return self._msm.msm_g1(points, scalars, bases_key=bases_key)

    def msm_g2(self, points: Sequence[Any], scalars: Sequence[int], *, bases_key: str | None = None):
        """G2 stays on the CPU (the split-proving tail), as in the CPU backend."""
        if self._cpu is None:
            from gpu_engine.backends.cpu import CpuBackend

            self._cpu = CpuBackend()
        return self._cpu.msm_g2(points, scalars, bases_key=bases_key)

    def synchronize(self) -> None:
        self._ready()
        with self._errors("synchronizing"):
            assert self.ops is not None  # _ready opened the device
            self.ops.synchronize()

    def _drop_context(self) -> None:
        if self._ctx is not None:
            with contextlib.suppress(Exception):
                self.drv.Context.pop()
            with contextlib.suppress(Exception):
                self._ctx.detach()
            self._ctx = None

    def _release(self) -> list[str]:
        """Free what can be freed, release the context, leave the device's registry."""
        failed: list[str] = self._free_device_memory() if self._ctx is not None else []
        self._drop_context()
        self.ops = None
        cuda_devices.leave(self.gpu_ordinal, self)
        return failed

    def close(self) -> None:
        """Free device memory and release the context; call from the owning thread. In a faulted
        context the frees that fail are skipped (releasing the context reclaims them)."""
        if self._ctx is None:
            cuda_devices.leave(self.gpu_ordinal, self)
            return
        if threading.get_ident() != self._thread:
            raise RuntimeError("a CudaBackend must be closed in the thread that created it")
        self._release()
