"""An illegal address in the engine, end to end: GPU workers run the real CudaBackend on the fake PyCUDA
(kernels on the host build); the faulting partition is retried with the reason recorded, the workers
on that device rebuild onto a fresh context, and the job's proofs verify."""
from __future__ import annotations

import pytest

from gpu_engine import queue
from gpu_engine.backends import cuda
from gpu_engine.models import PartitionRun, ProofJob
from tests.backends.fake_pycuda import ILLEGAL_ADDRESS, FakeGpu, install
from tests.engine.conftest import make_engine  # noqa: F401 - the engine fixture
from tests.engine.helpers import all_final, running, wait_for


@pytest.mark.django_db(transaction=True)
def test_illegal_address_retries_the_partition_on_a_fresh_context(make_engine, monkeypatch):  # noqa: F811
    gpu = FakeGpu()
    install(monkeypatch, gpu)
    monkeypatch.setattr(cuda, "_cubins", {})
    gpu.fault_on["msm_chunk_sum_kernel"] = ILLEGAL_ADDRESS  # the first MSM on the device faults
    queue.submit_job("window-post", "fault-on-gpu")
    engine = make_engine(backend="cuda", workers_per_device=2)
    with running(engine):
        wait_for(lambda: all_final(["fault-on-gpu"]), timeout=120)
        engine.history.flush(10)
        snap = engine.tracker.snapshot()
    job = ProofJob.objects.get(job_id="fault-on-gpu")
    assert job.status == "done" and job.verified
    runs = PartitionRun.objects.filter(job=job)
    assert sorted(runs.values_list("state", flat=True)) == ["done", "retried"]
    retried = runs.get(state="retried").error
    assert "GPU 0: CUDA error while" in retried and ILLEGAL_ADDRESS in retried and "KeyError" not in retried
    assert gpu.contexts_made == 2 and gpu.primary[0] is None  # a fresh context after the fault, released at stop
    assert all(w["state"] == "idle" for w in snap["gpu_workers"])
