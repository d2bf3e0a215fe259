"""The CPU-heavy proving work runs outside the engine's process: the pool's children compute the
device part and the finalize step (their pids are not ours), and the proofs still verify."""
from __future__ import annotations

import os

import pytest

from gpu_engine import queue
from gpu_engine.engine.proving import ParamsRef, ProvingPool, default_size
from gpu_engine.groth16 import api
from gpu_engine.models import ProofJob
from tests.engine.helpers import all_final, running, wait_for


def test_pool_proves_a_partition_in_a_child_process(params_dir):
    params = api.load_params("winning-post", params_dir)  # prepared by the session fixture; the child only reads
    ref = ParamsRef.of("winning-post", 1, params_dir)
    witness = api.synthesize_partition("winning-post", "pool-unit", 0)
    pool = ProvingPool(1, [ref])
    pool.start()
    try:
        out, device_pid = pool.prove_device(ref, witness)
        proof, finalize_pid = pool.finalize(ref, witness, out)
        children = pool.pids()
    finally:
        pool.shutdown()
    assert device_pid != os.getpid() and finalize_pid != os.getpid()
    assert device_pid in children and finalize_pid in children
    assert api.verify_partition(params.vk, proof.public_inputs, proof.proof)
    assert pool.inflight == 0


@pytest.mark.django_db(transaction=True)
def test_engine_runs_device_and_finalize_in_the_pool(make_engine):
    queue.submit_job("window-post", "pooled")
    engine = make_engine(workers_per_device=2, finalizers=1)
    assert engine.proving_processes == default_size("cpu", 2, 1) >= 1
    with running(engine):
        wait_for(lambda: all_final(["pooled"]), timeout=60)
    assert ProofJob.objects.get(job_id="pooled").status == "done"
    device, finalize = engine.stats.proved_in["device"], engine.stats.proved_in["finalize"]
    assert sum(device.values()) == sum(finalize.values()) == 1
    assert os.getpid() not in device and os.getpid() not in finalize


@pytest.mark.django_db(transaction=True)
def test_zero_proving_processes_proves_in_the_engine_threads(make_engine):
    queue.submit_job("winning-post", "in-thread")
    engine = make_engine(proving_processes=0)
    with running(engine):
        wait_for(lambda: all_final(["in-thread"]), timeout=60)
    assert ProofJob.objects.get(job_id="in-thread").status == "done"
    assert dict(engine.stats.proved_in["device"]) == {os.getpid(): 1}
    assert dict(engine.stats.proved_in["finalize"]) == {os.getpid(): 1}


def test_default_size_counts_the_threads_that_submit():
    cores = os.cpu_count() or 1
    assert default_size("cpu", 2, 1) == min(3, cores)
    assert default_size("cuda", 8, 1) == 1  # with CUDA only the finalizers submit
    assert default_size("cpu", 64, 64) == cores
