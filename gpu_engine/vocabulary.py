"""The words the engine, the panel, the admin, the console and the tests share, defined once.

Everything here is part of the snapshot contract (docs/SNAPSHOT.md): partition phases, worker
states, the live status of a pipeline, and the keys of each snapshot section. Import them; never
spell them again.
"""
from __future__ import annotations

from gpu_engine import schema
from gpu_engine.schema import required_keys

# ---- partition phases (tracker, waterfall cells) ---------------------------------------------
PENDING = "pending"
SYNTHESIZING = "synthesizing"
SYNTH_DONE = "synth_done"
GPU = "gpu"
FINALIZING = "finalizing"
DONE = "done"
FAILED = "failed"
PHASES = (PENDING, SYNTHESIZING, SYNTH_DONE, GPU, FINALIZING, DONE, FAILED)
# Phases in which some thread is still working on the partition: a job is not purged while
# one of its partitions is here, so a late event never meets an unknown job.
ACTIVE_PHASES = frozenset({SYNTHESIZING, GPU, FINALIZING})

# ---- GPU worker states --------------------------------------------------------------------------
IDLE = "idle"
PROVING = "proving"
ERROR = "error"
WORKER_STATES = (IDLE, PROVING, ERROR)

# ---- a pipeline's live status (snapshot `pipelines[].status`) --------------------------------
QUEUED = "queued"
RUNNING = "running"
CANCELLED = "cancelled"
REQUEUED = "requeued"   # a stopping engine or a lost lease handed the job back
JOB_STATUSES = (QUEUED, RUNNING, DONE, FAILED, CANCELLED, REQUEUED)
# job_completed(outcome=...): how a job that did not succeed ended, when it is not a failure.
JOB_OUTCOMES = (CANCELLED, REQUEUED)

# ---- snapshot keys (the documented ones; producers may add more, readers ignore the rest) -----
SNAPSHOT_KEYS = required_keys(schema.Snapshot)
PIPELINE_KEYS = required_keys(schema.Pipeline)
PARTITION_KEYS = required_keys(schema.Partition)
WORKER_KEYS = required_keys(schema.GpuWorker)
GPU_KEYS = required_keys(schema.Gpu)
COUNTER_KEYS = required_keys(schema.Counters)

# ---- tracker consistency (gpu_engine/tracker/consistency.py) ---------------------------------
NO_WORKER = "no-worker"     # a partition is in `gpu` but no worker is proving it
NOT_IN_GPU = "not-in-gpu"   # a worker is proving a partition that is not in `gpu`
CONSISTENCY_PROBLEMS = {
    NO_WORKER: "partition in gpu, but no worker is proving it",
    NOT_IN_GPU: "worker proving a partition that is not in gpu",
}
CONSISTENCY_KEYS = required_keys(schema.ConsistencyIssue)
