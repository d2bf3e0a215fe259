"""A stand-in for `pycuda.driver` and `pycuda.compiler` that runs the CUDA backend's own code on the CPU.

Device memory is numpy, kernels are the host build of the same kernel bodies (the emulation
library), and the errors are PyCUDA's classes with PyCUDA's mapping of driver codes (read in its
wrap_cudadrv.cpp): an illegal address (700) is a LogicError, an out-of-memory a MemoryError, a
launch failure a LaunchError. A fault is sticky as on a GPU: once a device's primary context has
faulted, every call in it raises the same error until the last retain of it is released.
Like PyCUDA it refuses Python ints as kernel arguments (it needs numpy scalars).
"""
from __future__ import annotations

import ctypes
import hashlib
import threading
import types
from typing import Any

import numpy as np

from gpu_engine.backends import emulation

ILLEGAL_ADDRESS = "an illegal memory access was encountered"


class Error(Exception):
    pass


class MemoryError(Error):
    pass


class LogicError(Error):
    pass


class LaunchError(Error):
    pass


class RuntimeError(Error):
    pass


class CompileError(Error):
    pass


class FakeGpu:
    """The state of the fake machine: devices, their primary contexts, memory, injected faults."""

    def __init__(self, devices: int = 1, memory_bytes: int = 1 << 30, arch: tuple[int, int] = (9, 0)) -> None:
        self.devices, self.memory_bytes, self.arch = devices, memory_bytes, arch
        self.lib = emulation.load_library()
        self.lock = threading.RLock()
        self.primary: dict[int, PrimaryContext | None] = {}
        self.contexts_made = 0
        self.used = {d: 0 for d in range(devices)}
        self.fault_on: dict[str, str] = {}  # kernel name -> message raised at the next sync
        self.bad_cubin_loads = 0  # module_from_buffer fails this many more times
        self.compiles = 0
        self.pinned_sizes: list[int] = []
        self.launches: list[tuple[str, tuple, tuple]] = []
        self.attributes: dict[str, dict[str, int]] = {}  # kernel -> attribute overrides (kernel report tests)
        self.allocations: dict[int, DeviceAllocation] = {}
        self.local = threading.local()
        self.driver = self._driver_module()
        self.compiler = types.SimpleNamespace(compile=self._compile)

    # -- pieces of the driver module --

    def _driver_module(self) -> types.SimpleNamespace:  # noqa: C901 - one fake module: a table of small closures
        gpu = self
        local = self.local

        class Device:
            def __init__(self, ordinal: int) -> None:
                if not 0 <= ordinal < gpu.devices:
                    raise LogicError("cuDeviceGet failed: invalid device ordinal")
                self.ordinal = ordinal

            @staticmethod
            def count() -> int:
                return gpu.devices

            def name(self) -> str:
                return "Fake GPU (host emulation)"

            def compute_capability(self) -> tuple[int, int]:
                return gpu.arch

            def retain_primary_context(self) -> PrimaryContext:
                with gpu.lock:
                    ctx = gpu.primary.get(self.ordinal)
                    if ctx is None:
                        ctx = gpu.primary[self.ordinal] = PrimaryContext(gpu, self.ordinal)
                        gpu.contexts_made += 1
                    ctx.refs += 1
                    return ctx

        class Context:
            @staticmethod
            def pop() -> None:
                local.current = None

        def current() -> PrimaryContext:
            ctx = getattr(local, "current", None)
            if ctx is None or ctx.destroyed:
                raise LogicError("no current context")
            ctx.raise_if_faulted()
            return ctx

        gpu.current = current

        def mem_alloc(nbytes: int) -> DeviceAllocation:
            ctx = current()
            with gpu.lock:
                if gpu.used[ctx.ordinal] + nbytes > gpu.memory_bytes:
                    raise MemoryError("cuMemAlloc failed: out of memory")
                gpu.used[ctx.ordinal] += nbytes
            return DeviceAllocation(gpu, ctx, nbytes)

        def mem_get_info() -> tuple[int, int]:
            ctx = current()
            return gpu.memory_bytes - gpu.used[ctx.ordinal], gpu.memory_bytes

        def pagelocked_empty(shape: int, dtype: Any) -> np.ndarray:
            current()
            host = HostAllocation(int(shape) * np.dtype(dtype).itemsize)
            gpu.pinned_sizes.append(len(host))
            return np.frombuffer(host, dtype=dtype)

        def memcpy_htod_async(dest: Any, src: np.ndarray, stream: Any = None) -> None:
            current()
            view, off = gpu.resolve(dest)
            raw = np.ascontiguousarray(src).view(np.uint8)
            view.view(np.uint8)[off:off + raw.size] = raw

        def memcpy_dtoh_async(dest: np.ndarray, src: Any, stream: Any = None) -> None:
            current()
            view, off = gpu.resolve(src)
            raw = dest.view(np.uint8)
            raw[:] = view.view(np.uint8)[off:off + raw.size]

        def memcpy_dtod_async(dest: Any, src: Any, nbytes: int, stream: Any = None) -> None:
            current()
            dv, doff = gpu.resolve(dest)
            sv, soff = gpu.resolve(src)
            dv.view(np.uint8)[doff:doff + nbytes] = sv.view(np.uint8)[soff:soff + nbytes]

        def memset_d32_async(dest: Any, value: int, count: int, stream: Any = None) -> None:
            current()
            view, off = gpu.resolve(dest)
            view[off // 4: off // 4 + count] = value

        class Stream:
            def __init__(self) -> None:
                current()

            def synchronize(self) -> None:
                current()

        def module_from_buffer(cubin: bytes) -> Module:
            current()
            if gpu.bad_cubin_loads:
                gpu.bad_cubin_loads -= 1
                raise LogicError("cuModuleLoadDataEx failed: device kernel image is invalid")
            return Module(gpu, cubin)

        def init() -> None:
            pass

        return types.SimpleNamespace(
            Error=Error, MemoryError=MemoryError, LogicError=LogicError, LaunchError=LaunchError,
            RuntimeError=RuntimeError, CompileError=CompileError, Device=Device, Context=Context,
            DeviceAllocation=DeviceAllocation, mem_alloc=mem_alloc, mem_get_info=mem_get_info,
            pagelocked_empty=pagelocked_empty, memcpy_htod_async=memcpy_htod_async,
            memcpy_dtoh_async=memcpy_dtoh_async, memcpy_dtod_async=memcpy_dtod_async,
            memset_d32_async=memset_d32_async, Stream=Stream, module_from_buffer=module_from_buffer, init=init,
            function_attribute=types.SimpleNamespace(NUM_REGS="NUM_REGS", MAX_THREADS_PER_BLOCK="MAX_THREADS_PER_BLOCK",
                                                     LOCAL_SIZE_BYTES="LOCAL_SIZE_BYTES",
                                                     SHARED_SIZE_BYTES="SHARED_SIZE_BYTES"),
        )

    def _compile(self, source: str, **kwargs: Any) -> bytes:
        self.compiles += 1
        return b"fake-cubin:" + hashlib.sha256(source.encode()).hexdigest().encode() + b":" + source.encode()

    # -- memory --

    _next_address = 1 << 20

    def resolve(self, ref: Any) -> tuple[np.ndarray, int]:
        """(the allocation's words, byte offset) of a DeviceAllocation or an int address inside one."""
        address = int(ref)
        for base, alloc in self.allocations.items():
            if base <= address < base + alloc.nbytes:
                if alloc.freed:
                    raise LogicError(f"{ILLEGAL_ADDRESS} (freed allocation)")
                return alloc.words, address - base
        raise LogicError(f"{ILLEGAL_ADDRESS} (address {address:#x})")


class HostAllocation(bytearray):
    """Page-locked memory in PyCUDA: the array's base, with free()."""

    def free(self) -> None:
        self.freed = True


class PrimaryContext:
    def __init__(self, gpu: FakeGpu, ordinal: int) -> None:
        self.gpu, self.ordinal = gpu, ordinal
        self.refs, self.faulted, self.destroyed = 0, "", False

    def push(self) -> None:
        self.gpu.local.current = self

    def raise_if_faulted(self) -> None:
        if self.faulted:
            raise LogicError(self.faulted)

    def detach(self) -> None:
        with self.gpu.lock:
            self.refs -= 1
            if self.refs == 0:
                self.destroyed = True
                self.gpu.primary[self.ordinal] = None
                for base, alloc in list(self.gpu.allocations.items()):
                    if alloc.ctx is self:
                        self.gpu.used[self.ordinal] -= 0 if alloc.freed else alloc.nbytes
                        del self.gpu.allocations[base]


class DeviceAllocation:
    def __init__(self, gpu: FakeGpu, ctx: PrimaryContext, nbytes: int) -> None:
        self.gpu, self.ctx, self.nbytes = gpu, ctx, nbytes
        self.words = np.full(-(-nbytes // 4), emulation.POISON, dtype=np.uint32)
        self.freed = False
        with gpu.lock:
            self.address = FakeGpu._next_address
            FakeGpu._next_address += (nbytes + 255) // 256 * 256 + 256
            gpu.allocations[self.address] = self

    def __int__(self) -> int:
        return self.address

    def free(self) -> None:
        self.gpu.current()  # a faulted context refuses, as cuMemFree does
        if not self.freed:
            self.freed = True
            with self.gpu.lock:
                self.gpu.used[self.ctx.ordinal] -= self.nbytes


class Module:
    def __init__(self, gpu: FakeGpu, cubin: bytes) -> None:
        self.gpu, self.source = gpu, cubin.split(b":", 2)[2].decode()

    def get_function(self, name: str) -> Function:
        self.gpu.current()
        if f" {name}(" not in self.source:
            raise LogicError("cuModuleGetFunction failed: named symbol not found")
        return Function(self.gpu, name)


class Function:
    DEFAULTS = {"NUM_REGS": 64, "MAX_THREADS_PER_BLOCK": 1024, "LOCAL_SIZE_BYTES": 0, "SHARED_SIZE_BYTES": 0}

    def __init__(self, gpu: FakeGpu, name: str) -> None:
        self.gpu, self.name = gpu, name

    def get_attribute(self, attribute: str) -> int:
        return self.gpu.attributes.get(self.name, {}).get(attribute, self.DEFAULTS[attribute])

    def __call__(self, *args: Any, block: tuple, grid: tuple, stream: Any = None) -> None:
        ctx = self.gpu.current()
        cargs = []
        for i, arg in enumerate(args):
            if isinstance(arg, DeviceAllocation):
                cargs.append(ctypes.c_void_p(arg.words.ctypes.data))
            elif isinstance(arg, np.uint32):
                cargs.append(ctypes.c_uint32(int(arg)))
            else:
                raise TypeError(f"invalid type on parameter #{i} (0-based)")
        self.gpu.launches.append((self.name, block, grid))
        message = self.gpu.fault_on.pop(self.name, None)
        if message is not None:  # reported at the next call, as an asynchronous fault is
            ctx.faulted = f"cuStreamSynchronize failed: {message}"
            return
        getattr(self.gpu.lib, self.name)(*cargs)


def install(monkeypatch: Any, gpu: FakeGpu) -> None:
    """Make `import pycuda.driver` / `pycuda.compiler` give the fake."""
    import sys

    package = types.ModuleType("pycuda")
    package.driver, package.compiler = gpu.driver, gpu.compiler
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", gpu.driver)
    monkeypatch.setitem(sys.modules, "pycuda.compiler", gpu.compiler)
