"""The CUDA backend's own code (CudaOps, CudaBackend, the budget, pinned staging) run on a fake PyCUDA
whose kernels are the host build of the same kernel bodies: everything but the GPU itself."""
from __future__ import annotations

import random
import threading

import pytest

from gpu_engine.backends import DeviceError
from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16.field import R
from tests.backends.fake_pycuda import FakeGpu, install
from tests.backends.helpers import expected_msm, random_points

RNG = random.Random(95)
CPU = CpuBackend()


@pytest.fixture
def gpu(monkeypatch) -> FakeGpu:
    fake = FakeGpu()
    install(monkeypatch, fake)
    return fake


def _vec(n: int) -> list[int]:
    return [RNG.randrange(R) for _ in range(n)]


def test_ntt_h_and_msm_match_the_cpu(gpu):
    from gpu_engine.backends.cuda import CudaBackend

    backend = CudaBackend(0)
    try:
        a, b, c = _vec(64), _vec(64), _vec(64)
        assert backend.ntt(a, coset=True) == CPU.ntt(a, coset=True)
        assert backend.compute_h(a, b, c) == CPU.compute_h(a, b, c)
        assert backend.compute_h_odd_coset(a, b, c) == CPU.compute_h_odd_coset(a, b, c)
        pts, sc = random_points(70, RNG), _vec(70)
        assert backend.msm_g1(pts, sc, bases_key="k") == expected_msm(pts, sc)
        assert backend.msm_g1(pts, sc[::-1], bases_key="k") == expected_msm(pts, sc[::-1])
    finally:
        backend.close()
    assert gpu.used[0] == 0  # every buffer freed
    names = {name for name, _, _ in gpu.launches}
    assert {"msm_chunk_sum_kernel", "ntt_butterfly_kernel", "scan_block_kernel"} <= names
    assert all(block == (1024, 1, 1) for name, block, _ in gpu.launches if name.startswith("scan_"))


def test_pinned_staging_is_exact_and_bounded(gpu, monkeypatch):
    from gpu_engine.backends import cuda

    backend = cuda.CudaBackend(0)
    try:
        v = _vec(128)
        assert backend.ntt(v) == CPU.ntt(v)
        assert gpu.pinned_sizes == [128 * 32]  # exactly the transfer, not the next power of two
        monkeypatch.setattr(cuda, "STAGING_LIMIT", 1024)
        backend.ops.release_all()
        backend._ntt.forget()
        assert backend.ntt(v) == CPU.ntt(v)  # 4 KiB moved through a 1 KiB buffer in pieces
        assert max(gpu.pinned_sizes[1:]) == 1024
    finally:
        backend.close()


def test_an_msm_past_the_workers_share_is_refused_before_allocating(monkeypatch):
    gpu = FakeGpu(memory_bytes=1 << 20)
    install(monkeypatch, gpu)
    from gpu_engine.backends.cuda import CudaBackend

    backend = CudaBackend(0)
    try:
        used = gpu.used[0]
        with pytest.raises(DeviceError, match=r"an MSM of 4096 points needs .* GiB .*may use") as info:
            backend.msm_g1(random_points(4096, RNG), _vec(4096))
        assert info.value.out_of_memory and gpu.used[0] == used
    finally:
        backend.close()


def test_workers_on_one_device_split_its_memory(gpu):
    from gpu_engine.backends import cuda_devices
    from gpu_engine.backends.cuda import CudaBackend

    shares: list[int] = []
    opened, done = threading.Barrier(2), threading.Event()

    def worker() -> None:
        backend = CudaBackend(0)
        opened.wait()
        shares.append(backend._budget())
        done.wait(10)
        backend.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    while len(shares) < 2:
        threading.Event().wait(0.01)
    assert cuda_devices.workers(0) == 2
    done.set()
    for t in threads:
        t.join(10)
    assert all(s <= int(gpu.memory_bytes * cuda_devices.USABLE_FRACTION) // 2 for s in shares)
    assert cuda_devices.workers(0) == 0
