"""gpucheck's kernel table: every kernel's registers, threads-per-block limit, local and shared memory as
PyCUDA reports them (here from the fake driver), with spills and too-large launch blocks flagged."""
from __future__ import annotations

from gpu_engine.backends.cuda import MODULES, kernel_names
from gpu_engine.gpucheck import kernel_report
from tests.backends.fake_pycuda import FakeGpu, install


def test_every_kernel_is_listed_and_problems_are_flagged(monkeypatch):
    gpu = FakeGpu()
    install(monkeypatch, gpu)
    gpu.attributes["msm_chunk_sum_kernel"] = {"LOCAL_SIZE_BYTES": 672}
    gpu.attributes["scan_block_kernel"] = {"MAX_THREADS_PER_BLOCK": 640, "SHARED_SIZE_BYTES": 8192}
    rows = kernel_report.rows(0)
    assert [r["kernel"] for r in rows] == [k for m in MODULES for k in kernel_names(m)]
    table = kernel_report.markdown(rows)
    assert "| msm.cu | msm_chunk_sum_kernel | 64 | 1024 | 256 | 672 | 0 | spills to local memory |" in table
    assert "| msm.cu | scan_block_kernel | 64 | 640 | 1024 | 0 | 8192 | launch block too large |" in table
    assert "| ntt.cu | ntt_butterfly_kernel | 64 | 1024 | 256 | 0 | 0 | ok |" in table
    assert kernel_report.main([]) == 1  # a launch the device refuses fails the step
    assert gpu.primary[0] is None  # the report released its context
