"""GPU workers and finalizers: the device part of every partition, then its CPU tail.

Each GPU worker is a thread that owns its backend (a CUDA context is bound to the thread that made
it) for its whole life. After the device part it hands the CPU tail to the finalizer pool and takes
the next partition at once: split proving. The tracker hears of that hand-off as
`partition_finalize_start`, which releases the worker by this exact assignment.
"""
from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gpu_engine import backends
from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.backends.errors import DeviceError
from gpu_engine.engine.ledger import Ledger
from gpu_engine.engine.proving import ParamsRef, ProvingPool, system_for
from gpu_engine.engine.state import RunState, Work, WorkQueue
from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.models import PartitionState

log = logging.getLogger("gpu_engine.engine")


class ProofError(RuntimeError):
    """A partition proof that does not verify."""


class Prover:
    """Runs the two halves of a partition proof where they belong: in the proving pool when there
    is one and the backend is the stock CPU one (its MSMs and NTTs hold the GIL), else in the
    calling thread (CUDA: that thread owns the context and its waits release the GIL; any other
    backend class, such as an injected one, cannot be rebuilt in a child)."""

    def __init__(self, g16: Any, params: dict[str, Any], refs: dict[str, ParamsRef], pool: ProvingPool | None,
                 stats: Any) -> None:
        self.g16, self.params, self.refs, self.pool, self.stats = g16, params, refs, pool, stats
        self.g16_kinds = frozenset(PROOF_KINDS)
        self.cpu = backends.create_backend("cpu")

    def device(self, work: Work, backend: Any) -> Any:
        """H and the G1 MSMs. A dead pool child raises BrokenProcessPool: a failed attempt."""
        kind = work.job.kind
        if self.pool is not None and type(backend) is CpuBackend:
            out, pid = self.pool.prove_device(self.refs[kind], work.witness)
        else:
            out, pid = self._system(kind).prove_device(self.params[kind], work.witness, backend), os.getpid()
        self.stats.record_proved_in("device", pid)
        return out

    def finalize(self, work: Work, out: Any) -> Any:
        """The CPU tail (G2 MSM and assembly), then the proof is verified against the kind's key."""
        kind = work.job.kind
        if self.pool is not None and type(self.cpu) is CpuBackend:
            proof, pid = self.pool.finalize(self.refs[kind], work.witness, out)
        else:
            proof, pid = self._system(kind).prove_finalize(self.params[kind], work.witness, out, self.cpu), os.getpid()
        self.stats.record_proved_in("finalize", pid)
        if not self.g16.verify_partition(self.params[kind].vk, proof.public_inputs, proof.proof):
            hint = "" if kind in self.g16_kinds else " (the witness may not satisfy the circuit's constraints)"
            raise ProofError(f"partition {work.index} of {work.job.job_id} does not verify{hint}")
        return proof

    def _system(self, kind: str) -> Any:
        """groth16.api for built-in kinds, circom.api for registered circuits."""
        return self.g16 if kind in self.g16_kinds else system_for(self.refs[kind])


class Finalizers:
    """The finalizer thread pool: finishes, verifies and settles each partition after its device part."""

    def __init__(self, count: int, ledger: Ledger, prover: Prover, delay_secs: float = 0.0) -> None:
        self.ledger, self.prover, self.delay_secs = ledger, prover, delay_secs
        self._executor = ThreadPoolExecutor(count, thread_name_prefix="finalizer")

    def submit(self, work: Work, out: Any) -> None:
        self._executor.submit(self._guarded_finalize, work, out)

    def _guarded_finalize(self, work: Work, out: Any) -> None:
        """An executor keeps a task's exception in a future nobody reads: here it stops the engine."""
        try:
            self._finalize(work, out)
        except BaseException as exc:  # a finalizer crash is an engine crash
            log.critical("finalizer crashed on partition %d of %s", work.index, work.job.job_id, exc_info=True)
            self.ledger.run.crash("finalizer", exc)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)

    def _finalize(self, work: Work, out: Any) -> None:
        ledger, job = self.ledger, work.job
        started_at, start = time.time(), time.monotonic()
        try:
            if self.delay_secs:
                time.sleep(self.delay_secs)
            proof = self.prover.finalize(work, out)
        except Exception as exc:  # noqa: BLE001 - every failure must settle the partition
            ledger.partition_error(work, "finalize", exc, finalize_span=(started_at, time.time()))
            return
        finalize_ms = (time.monotonic() - start) * 1000
        finalize_span = (started_at, time.time())
        with ledger.lock:
            if ledger.settle_if_stopped(work):
                return
            ledger.tracker.partition_gpu_end(job.job_id, work.index, work.worker_id)
            job.proofs[work.index] = proof
            for key, value in (proof.timings or {}).items():
                job.sums[key] += float(value)
            job.sums["gpu_ms"] += work.gpu_ms or 0.0
            job.sums["finalize_ms"] += finalize_ms
            ledger.stats.record_phases(synth_ms=work.synth_ms, gpu_ms=work.gpu_ms, finalize_ms=finalize_ms)
            ledger.settle(work, PartitionState.DONE, "", finalize_ms=finalize_ms, finalize_span=finalize_span)


class GpuWorker:
    """One GPU worker thread: takes synthesized partitions from the work queue, one at a time."""

    def __init__(self, worker_id: int, ordinal: int, backend_name: str, ledger: Ledger, work: WorkQueue,
                 prover: Prover, finalizers: Finalizers, run: RunState) -> None:
        self.worker_id, self.ordinal, self.backend_name = worker_id, ordinal, backend_name
        self.ledger, self.work, self.prover, self.finalizers, self.run = ledger, work, prover, finalizers, run

    def run_loop(self) -> None:
        backend = self._open_backend()
        try:
            while True:
                work = self.work.get()
                if work is WorkQueue.STOP:
                    break
                if backend is None:
                    backend = self._open_backend()
                    if backend is None:  # stopping without a device: another worker or the drain takes it
                        self.work.put(work)
                        time.sleep(0.05)
                        continue
                if not self._device_part(work, backend):
                    backend.close()
                    backend = self._open_backend()
        finally:
            if backend is not None:
                backend.close()

    def _open_backend(self) -> Any:
        """Create this worker's backend in this thread; on failure show `error` and keep trying."""
        tracker, delay = self.ledger.tracker, 0.5
        while True:
            try:
                backend = backends.create_backend(self.backend_name, self.ordinal)
                tracker.worker_recovered(self.worker_id)
                return backend
            except Exception as exc:  # noqa: BLE001 - a broken device must not kill the engine
                log.error("worker %s: cannot open %s backend: %s", self.worker_id, self.backend_name, exc)
                tracker.worker_error(self.worker_id, f"backend unavailable: {exc}")
                if self.run.stopped.wait(delay) or self.run.draining.is_set() and not self.ledger.active_ids():
                    return None
                delay = min(delay * 2, 10.0)

    def _device_part(self, work: Work, backend: Any) -> bool:
        """Run one partition's device part; False when the backend must be rebuilt."""
        ledger, job, stats = self.ledger, work.job, self.ledger.stats
        with ledger.lock:
            if ledger.settle_if_stopped(work):
                return True
            ledger.tracker.partition_gpu_start(job.job_id, work.index, self.worker_id)
        work.worker_id, work.gpu_ordinal = self.worker_id, self.ordinal
        work.gpu_started, start = time.time(), time.monotonic()
        try:
            out = self.prover.device(work, backend)
        except DeviceError as exc:  # the context is unusable: rebuild the backend
            work.gpu_ended = time.time()
            stats.record_busy(self.worker_id, start, time.monotonic())
            with ledger.lock:
                ledger.tracker.worker_error(self.worker_id, str(exc))
            ledger.partition_error(work, "device", exc)
            return False
        except Exception as exc:  # noqa: BLE001 - every failure must settle the partition
            work.gpu_ended = time.time()
            stats.record_busy(self.worker_id, start, time.monotonic())
            ledger.partition_error(work, "device", exc)
            return True
        work.gpu_ended, end = time.time(), time.monotonic()
        stats.record_busy(self.worker_id, start, end)
        work.gpu_ms = (end - start) * 1000
        with ledger.lock:
            if ledger.settle_if_stopped(work):
                return True
            # Split proving: the worker is released by this exact assignment and moves on.
            ledger.tracker.partition_finalize_start(job.job_id, work.index, self.worker_id)
        self.finalizers.submit(work, out)
        return True
