"""The proving process pool: the CPU-heavy halves of a proof, run outside the web process.

In the embedded mode the engine shares its process (and its GIL) with Daphne. arkworks' MSMs and
the gmpy2 NTTs hold the GIL for their whole run (100-300 ms each), which stalls every WebSocket
frame and HTTP request behind them. Here they run in child processes instead; the engine's threads
submit and wait on a future, and a future wait releases the GIL.

The children import only `gpu_engine.groth16` and the CPU backend (no Django): they get plain
picklable data (the witness, the device output) plus a `ParamsRef`, and load the parameters from
the on-disk cache the parent already generated, once per child (`load_params` keeps them in
memory). A child that dies surfaces as `BrokenProcessPool` (the pool rebuilds itself, see pools.py); the
engine treats it as a failed attempt of that partition.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterable

from gpu_engine.engine.pools import BrokenProcessPool, ProcessPool

if TYPE_CHECKING:
    from gpu_engine.backends.cpu import CpuBackend

__all__ = ["BrokenProcessPool", "ParamsRef", "ProvingPool", "default_finalizers", "default_size"]


@dataclass(frozen=True)
class ParamsRef:
    """Which parameters a child loads: by kind and scale from a cache directory (never shipped whole)."""

    kind: str
    scale: int
    params_dir: str

    @classmethod
    def of(cls, kind: str, scale: int, params_dir: Path | str) -> ParamsRef:
        return cls(kind, int(scale), str(Path(params_dir).resolve()))


def default_finalizers(backend: str, cpus: int | None = None) -> int:
    """Finalizer threads when `--finalizers` is not given. With a GPU the CPU tail is the slow stage:
    on an H200 one finalizer settled about 6 partitions a second while a worker's device part took
    44 ms, so there a quarter of the cores finish partitions (each a proving process too). The CPU
    backend keeps one: its workers are CPU work already."""
    cpus = cpus or os.cpu_count() or 2
    return max(1, cpus // 4) if backend == "cuda" else 1


def default_size(backend: str, workers: int, finalizers: int) -> int:
    """One process per thread that submits work, at most one per core.

    With the CPU backend both the workers (device part) and the finalizers submit; with CUDA only
    the finalizers do, since the device part stays in the thread that owns the CUDA context."""
    wanted = finalizers + (workers if backend == "cpu" else 0)
    return max(1, min(wanted, os.cpu_count() or 1))


# ---- child side (module-level functions, so they pickle by name) -----------------------------

_child_backend: CpuBackend | None = None


def system_for(ref: Any) -> ModuleType:
    """The proof system's module for a ref: `groth16.api` for a built-in kind, `circom.api` for a
    registered circuit (a `CircuitRef`). Both offer prove_device, prove_finalize, verify_partition."""
    if isinstance(ref, ParamsRef):
        from gpu_engine.groth16 import api as groth16_api

        return groth16_api
    from gpu_engine.circom import api as circom_api

    return circom_api


def _params(ref: Any) -> Any:
    if isinstance(ref, ParamsRef):
        from gpu_engine.groth16 import api

        return api.load_params(ref.kind, ref.params_dir, ref.scale)
    return system_for(ref).load(ref)


def _backend() -> CpuBackend:
    global _child_backend
    if _child_backend is None:
        from gpu_engine.backends.cpu import CpuBackend

        _child_backend = CpuBackend()
    return _child_backend


def _preload(refs: tuple[ParamsRef, ...]) -> None:
    for ref in refs:
        _params(ref)


def _run_device(ref: Any, witness: Any) -> tuple[Any, int]:
    return system_for(ref).prove_device(_params(ref), witness, _backend()), os.getpid()


def _run_finalize(ref: Any, witness: Any, device_out: Any) -> tuple[Any, int]:
    return system_for(ref).prove_finalize(_params(ref), witness, device_out, _backend()), os.getpid()


# ---- parent side -------------------------------------------------------------------------------

class ProvingPool(ProcessPool):
    """The process pool for `prove_device` / `prove_finalize`, its children preloading parameters.

    Each call blocks its thread (GIL released) until the child is done, and returns the result
    with the pid of the child that computed it."""

    def __init__(self, processes: int, preload: Iterable[ParamsRef] = ()) -> None:
        super().__init__("proving", processes, preload=functools.partial(_preload, tuple(preload)))

    def prove_device(self, ref: ParamsRef, witness: Any) -> tuple[Any, int]:
        """(DeviceOutput, pid): H and the G1 MSMs on the CPU backend, in a child."""
        return self.call(_run_device, ref, witness)

    def finalize(self, ref: ParamsRef, witness: Any, device_out: Any) -> tuple[Any, int]:
        """(PartitionProof, pid): the G2 MSM and the assembly, in a child."""
        return self.call(_run_finalize, ref, witness, device_out)
