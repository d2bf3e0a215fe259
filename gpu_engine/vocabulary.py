"""The words the engine, the panel, the admin, the console and the tests share, defined once.

Everything here is part of the snapshot contract (docs/SNAPSHOT.md): partition phases, worker
states, the live status of a pipeline, and the keys of each snapshot section. Import them; never
spell them again.
"""
from __future__ import annotations

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
SNAPSHOT_KEYS = ("engine_id", "seq", "generated_at", "uptime_secs", "backend", "memory", "synthesis",
                 "pipelines", "gpu_workers", "gpus", "counters", "consistency")
MEMORY_KEYS = ("total_bytes", "used_bytes", "available_bytes")
PIPELINE_KEYS = ("job_id", "proof_kind", "proof_label", "status", "started_secs_ago", "finished_secs_ago",
                 "total_partitions", "partitions_done", "partitions_failed", "partitions")
PARTITION_KEYS = ("index", "state", "synth_ms", "gpu_ms", "finalize_ms", "worker_id", "error")
WORKER_KEYS = ("worker_id", "gpu_ordinal", "state", "current_job", "current_partition", "current_proof_kind",
               "current_proof_label", "busy_secs", "error")
GPU_KEYS = ("ordinal", "name", "util_pct", "mem_used_bytes", "mem_total_bytes", "temp_c", "power_w")
COUNTER_KEYS = ("total_completed", "total_failed", "total_cancelled", "completed_by_kind", "failed_by_kind",
                "queue_depth")

# ---- fleet sources (statuspanel/fleet, docs/FLEET.md) ----------------------------------------
SOURCE_ONLINE = "online"            # the last poll answered a valid snapshot
SOURCE_STALE = "stale"              # no good snapshot for 2 intervals, no failure classified yet
SOURCE_UNREACHABLE = "unreachable"  # the last poll failed: refused, timeout, DNS, TLS, 401/403, ...
SOURCE_MALFORMED = "malformed"      # the last poll answered something that is no valid snapshot
SOURCE_STATES = (SOURCE_ONLINE, SOURCE_STALE, SOURCE_UNREACHABLE, SOURCE_MALFORMED)
# States in which the source counts as failing (fleet summary, metrics' source_up = 0).
SOURCE_DOWN_STATES = frozenset({SOURCE_UNREACHABLE, SOURCE_MALFORMED})
# A source is stale once its last good snapshot is older than this many poll intervals.
STALE_INTERVALS = 2
# Why a source is unreachable or malformed (`source.reason`); `source.error` says it in words.
# `grpc`: a gRPC status other than those above (UNIMPLEMENTED: the port serves no cuzk status);
# `not-protobuf`: a gRPC answer that does not decode as the message asked for.
UNREACHABLE_REASONS = ("refused", "timeout", "dns", "tls", "unauthorized", "forbidden", "http", "ssh", "network",
                       "grpc")
MALFORMED_REASONS = ("not-json", "too-large", "too-deep", "shape", "not-protobuf")
SOURCE_KINDS = ("cuzk", "vastmanager")
SOURCE_TRANSPORTS = ("http", "ssh")
SOURCE_KEYS = ("kind", "transport", "state", "error", "last_ok_secs_ago", "poll_ms")

# ---- tracker consistency (gpu_engine/tracker/consistency.py) ---------------------------------
NO_WORKER = "no-worker"     # a partition is in `gpu` but no worker is proving it
NOT_IN_GPU = "not-in-gpu"   # a worker is proving a partition that is not in `gpu`
CONSISTENCY_PROBLEMS = {
    NO_WORKER: "partition in gpu, but no worker is proving it",
    NOT_IN_GPU: "worker proving a partition that is not in gpu",
}
CONSISTENCY_KEYS = ("job_id", "partition", "worker_id", "problem")
