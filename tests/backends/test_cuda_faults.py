"""Faults in the shared context, with a fake driver that raises what PyCUDA raises (an illegal address
is a LogicError there): the partition fails with the reason, every worker on the device rebuilds onto
a fresh context, cleanup frees what it can, and no lookup turns a fault into a KeyError."""
from __future__ import annotations

import random
import threading

import pytest

from gpu_engine.backends import BackendUnavailable, DeviceError
from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16.field import R
from tests.backends.fake_pycuda import ILLEGAL_ADDRESS, FakeGpu, install
from tests.backends.helpers import expected_msm, random_points

RNG = random.Random(96)


@pytest.fixture
def gpu(monkeypatch) -> FakeGpu:
    from gpu_engine.backends import cuda

    monkeypatch.setattr(cuda, "_cubins", {})
    fake = FakeGpu()
    install(monkeypatch, fake)
    return fake


def _vec(n: int) -> list[int]:
    return [RNG.randrange(R) for _ in range(n)]


def test_illegal_address_fails_the_call_with_the_reason(gpu):
    from gpu_engine.backends.cuda import CudaBackend

    backend = CudaBackend(0)
    try:
        gpu.fault_on["msm_chunk_sum_kernel"] = ILLEGAL_ADDRESS
        with pytest.raises(DeviceError, match=f"GPU 0: CUDA error while running a G1 MSM of 40: .*{ILLEGAL_ADDRESS}") \
                as info:
            backend.msm_g1(random_points(40, RNG), _vec(40))
        assert not info.value.out_of_memory and info.value.gpu_ordinal == 0
        faulted_ctx = gpu.primary[0]
        v = _vec(32)
        assert backend.ntt(v) == CpuBackend().ntt(v)  # used again, it rebuilt onto a fresh context first
        assert faulted_ctx.destroyed and gpu.contexts_made == 2
    finally:
        backend.close()
    assert gpu.used[0] == 0 and gpu.primary[0] is None


def test_every_worker_on_the_device_rebuilds_onto_a_fresh_context(gpu):
    from gpu_engine.backends.cuda import CudaBackend

    v = _vec(64)
    pts, sc = random_points(30, RNG), _vec(30)
    results: dict[str, object] = {}
    ready = threading.Barrier(3)
    faulted, b_go, a_close = threading.Event(), threading.Event(), threading.Event()

    def worker_a() -> None:
        backend = CudaBackend(0)
        ready.wait()
        gpu.fault_on["ntt_butterfly_kernel"] = ILLEGAL_ADDRESS
        try:
            backend.ntt(v)
        except Exception as exc:  # noqa: BLE001 - checked below
            results["a_error"] = exc
        faulted.set()
        a_close.wait(10)
        backend.close()  # as the engine does after a DeviceError
        again = CudaBackend(0)
        results["a_again"] = again.msm_g1(pts, sc)
        again.close()

    def worker_b() -> None:
        backend = CudaBackend(0)
        ready.wait()
        b_go.wait(10)
        try:
            results["b"] = backend.ntt(v)  # rebuilds first: waits until A let go of the faulted context
        except Exception as exc:  # noqa: BLE001 - checked below
            results["b"] = exc
        backend.close()

    threads = [threading.Thread(target=worker_a), threading.Thread(target=worker_b)]
    for t in threads:
        t.start()
    ready.wait()
    assert faulted.wait(10)
    b_go.set()
    threading.Event().wait(0.2)  # B is waiting for A now
    a_close.set()
    for t in threads:
        t.join(30)
    assert isinstance(results["a_error"], DeviceError) and ILLEGAL_ADDRESS in str(results["a_error"])
    assert results["b"] == CpuBackend().ntt(v)
    assert results["a_again"] == expected_msm(pts, sc)
    assert gpu.contexts_made == 2  # the faulted one, then one fresh context shared again


def test_cleanup_frees_what_it_can(gpu):
    from gpu_engine.backends.cuda import CudaBackend

    backend = CudaBackend(0)
    ops = backend.ops
    bufs = [ops.buffer(tag, 4096) for tag in ("a", "b", "c")]

    def refuse() -> None:
        raise gpu.driver.LogicError(ILLEGAL_ADDRESS)

    bufs[1].free = refuse
    assert ops.release_all() == ["b"]
    assert bufs[0].freed and bufs[2].freed and not bufs[1].freed
    backend.close()
    assert gpu.used[0] == 0  # releasing the context reclaimed the one that could not be freed


def test_a_fault_during_kernel_lookup_is_a_device_error_not_a_key_error(gpu, monkeypatch):
    from gpu_engine.backends import cuda

    real = gpu.driver.module_from_buffer

    def faulted_module(cubin):
        module = real(cubin)
        module.get_function = lambda name: (_ for _ in ()).throw(
            gpu.driver.LogicError(f"cuModuleGetFunction failed: {ILLEGAL_ADDRESS}"))
        return module

    monkeypatch.setattr(gpu.driver, "module_from_buffer", faulted_module)
    with pytest.raises(DeviceError, match=ILLEGAL_ADDRESS):
        cuda.CudaBackend(0)
    monkeypatch.setattr(gpu.driver, "module_from_buffer", real)
    assert gpu.primary[0] is None  # the failed open released its context


def test_a_kernel_missing_from_its_module_is_named_at_open(gpu, monkeypatch):
    from gpu_engine.backends import cuda

    real = cuda.kernel_names
    monkeypatch.setattr(cuda, "kernel_names", lambda name: (*real(name), "msm_gone_kernel"))
    with pytest.raises(BackendUnavailable, match="kernel msm_gone_kernel is missing from the ntt.cu module"):
        cuda.CudaBackend(0)


def test_a_compiled_module_is_memoized_only_after_it_loaded(gpu):
    from gpu_engine.backends import cuda

    gpu.bad_cubin_loads = 1
    with pytest.raises(DeviceError, match="device kernel image is invalid"):
        cuda.CudaBackend(0)
    assert cuda._cubins == {}
    compiles = gpu.compiles
    backend = cuda.CudaBackend(0)
    assert gpu.compiles == compiles + len(cuda.MODULES)  # compiled again, not the bad one reused
    assert set(cuda._cubins) == {(m, "sm_90") for m in cuda.MODULES}
    backend.close()
    cuda.CudaBackend(0).close()
    assert gpu.compiles == compiles + len(cuda.MODULES)  # now memoized
