"""Worker-owned CUDA contexts and device errors (skipped without a device)."""
from __future__ import annotations

import random
import threading

import pytest

from gpu_engine.backends import DeviceError
from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16.field import R
from tests.backends.helpers import requires_gpu

pytestmark = requires_gpu


def test_backends_in_two_worker_threads():
    from gpu_engine.backends.cuda import CudaBackend

    rng = random.Random(81)
    vectors = [[rng.randrange(R) for _ in range(1 << 12)] for _ in range(2)]
    results: dict[int, object] = {}

    def worker(i: int) -> None:
        backend = CudaBackend(0)
        try:
            results[i] = [backend.ntt(vectors[i]) for _ in range(3)][-1]
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            results[i] = exc
        finally:
            backend.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    cpu = CpuBackend()
    assert results == {i: cpu.ntt(vectors[i]) for i in range(2)}


def test_backend_refuses_another_thread():
    from gpu_engine.backends.cuda import CudaBackend

    backend = CudaBackend(0)
    errors = []
    t = threading.Thread(target=lambda: errors.append(pytest.raises(RuntimeError, backend.ntt, [1, 2])))
    t.start()
    t.join()
    backend.close()
    assert errors and "thread" in str(errors[0].value)


def test_out_of_memory_is_reported_and_the_backend_recovers():
    from gpu_engine.backends.cuda import CudaBackend

    backend = CudaBackend(0)
    try:
        with pytest.raises(DeviceError) as info, backend._errors("allocating a huge buffer"):
            backend.ops.buffer("test:huge", 1 << 50)
        assert info.value.out_of_memory and info.value.gpu_ordinal == 0
        assert "out of device memory" in str(info.value)
        assert backend.ntt([1, 0, 0, 0]) == [1, 1, 1, 1]
    finally:
        backend.close()


def test_bad_ordinal_is_a_clear_error():
    from gpu_engine.backends import BackendUnavailable, device_count
    from gpu_engine.backends.cuda import CudaBackend

    with pytest.raises(BackendUnavailable, match="not present"):
        CudaBackend(device_count())


def test_tables_and_bases_are_rebuilt_after_an_out_of_memory():
    from gpu_engine.backends.cuda import CudaBackend
    from tests.backends.helpers import expected_msm, random_points

    rng = random.Random(82)
    backend = CudaBackend(0)
    try:
        v = [rng.randrange(R) for _ in range(256)]
        pts, sc = random_points(64, rng), [rng.randrange(R) for _ in range(64)]
        first = backend.ntt(v, coset=True)
        backend.msm_g1(pts, sc, bases_key="oom/a")
        with pytest.raises(DeviceError), backend._errors("allocating a huge buffer"):
            backend.ops.buffer("test:huge", 1 << 50)
        assert backend.ntt(v, coset=True) == first
        assert backend.msm_g1(pts, sc, bases_key="oom/a") == expected_msm(pts, sc)
    finally:
        backend.close()
