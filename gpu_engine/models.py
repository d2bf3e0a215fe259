"""The durable queue and the history: every job is a row before it is acknowledged.

Claims, leases and status changes go through `gpu_engine.queue`, which keeps them atomic; these
classes only describe the rows.
"""
from __future__ import annotations

from django.db import models

from gpu_engine import vocabulary as words
from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.validation import JOB_ID_MAX


class JobStatus(models.TextChoices):
    """A job row's status: the live pipeline statuses a row can be stored with."""

    QUEUED = words.QUEUED, "Queued"
    RUNNING = words.RUNNING, "Running"
    DONE = words.DONE, "Done"
    FAILED = words.FAILED, "Failed"
    CANCELLED = words.CANCELLED, "Cancelled"


FINAL_STATUSES = frozenset({JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED})

KIND_CHOICES = [(k.name, k.label) for k in PROOF_KINDS.values()]


class ProofJob(models.Model):
    """One proof request: its place in the queue, its claim, its result and its timings."""

    job_id = models.CharField(max_length=JOB_ID_MAX, unique=True)
    proof_kind = models.CharField(max_length=32, choices=KIND_CHOICES)
    priority = models.IntegerField(default=0, help_text="Higher is claimed first.")
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    total_partitions = models.PositiveIntegerField(default=1)

    submitted_at = models.DateTimeField(auto_now_add=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    claimed_by = models.CharField(max_length=128, blank=True, default="", help_text="Engine id holding the lease.")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0, help_text="Claims so far (a lost lease counts).")

    error = models.TextField(blank=True, default="")
    bundle = models.JSONField(null=True, blank=True, help_text="The proof bundle (exchange format).")
    verified = models.BooleanField(default=False)
    # db_default too: rows written by plain SQL (benchmarks, an operator) get the column filled.
    vk_fingerprint = models.CharField(max_length=64, blank=True, default="", db_default="",
                                      help_text="sha256 of the verifying key the bundle was proved under.")
    timings = models.JSONField(default=dict, blank=True, help_text="Per-phase totals and means in ms.")

    class Meta:
        ordering = ["-submitted_at"]
        indexes = [
            models.Index(fields=["status", "-priority", "submitted_at"], name="proofjob_claim_order"),
            models.Index(fields=["status", "lease_expires_at"], name="proofjob_lease"),
            models.Index(fields=["proof_kind", "status"], name="proofjob_kind_status"),
            # Throughput and job-latency charts: one engine's jobs finished in a window.
            models.Index(fields=["claimed_by", "finished_at"], name="proofjob_engine_finished"),
        ]

    def __str__(self) -> str:
        return f"{self.job_id} ({self.proof_kind}, {self.status})"

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES

    def duration_secs(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None

    def to_dict(self, *, include_bundle: bool = False) -> dict:
        """The API's view of a job (the bundle only on request: it is large)."""
        data = {
            "job_id": self.job_id,
            "proof_kind": self.proof_kind,
            "priority": self.priority,
            "status": self.status,
            "total_partitions": self.total_partitions,
            "submitted_at": _iso(self.submitted_at),
            "claimed_at": _iso(self.claimed_at),
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "claimed_by": self.claimed_by or None,
            "lease_expires_at": _iso(self.lease_expires_at),
            "attempts": self.attempts,
            "error": self.error or None,
            "verified": self.verified,
            "vk_fingerprint": self.vk_fingerprint or None,
            "timings": self.timings or {},
            "has_proof": self.verified,  # set only together with the bundle
        }
        if include_bundle:
            data["bundle"] = self.bundle
        return data


class PartitionState(models.TextChoices):
    """How one attempt at a partition ended (a history row)."""

    DONE = words.DONE, "Done"
    FAILED = words.FAILED, "Failed"
    RETRIED = "retried", "Retried"
    CANCELLED = words.CANCELLED, "Cancelled"


class PartitionRun(models.Model):
    """One attempt at one partition: where it ran and how long each phase took."""

    job = models.ForeignKey(ProofJob, on_delete=models.CASCADE, related_name="partition_runs")
    index = models.PositiveIntegerField()
    # The job's claim (ProofJob.attempts when this run's engine claimed it): a job re-proved after a
    # crash has rows from each claim, told apart by this; 0 for rows from before it was recorded.
    attempt = models.PositiveIntegerField(default=0, db_default=0)
    state = models.CharField(max_length=16, choices=PartitionState.choices)
    synth_ms = models.FloatField(null=True, blank=True)
    gpu_ms = models.FloatField(null=True, blank=True)
    finalize_ms = models.FloatField(null=True, blank=True)
    worker_id = models.CharField(max_length=128, blank=True, default="")
    gpu_ordinal = models.IntegerField(null=True, blank=True)
    engine_id = models.CharField(max_length=128, blank=True, default="")
    error = models.TextField(blank=True, default="")
    recorded_at = models.DateTimeField(auto_now_add=True)
    # The timeline and the charts: the kind (copied from the job, so a window query needs no join)
    # and each phase's wall-clock start and end (null for a phase the attempt never entered).
    proof_kind = models.CharField(max_length=32, blank=True, default="")
    synth_started_at = models.DateTimeField(null=True, blank=True)
    synth_ended_at = models.DateTimeField(null=True, blank=True)
    gpu_started_at = models.DateTimeField(null=True, blank=True)
    gpu_ended_at = models.DateTimeField(null=True, blank=True)
    finalize_started_at = models.DateTimeField(null=True, blank=True)
    finalize_ended_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True, help_text="When the attempt settled.")

    class Meta:
        ordering = ["job_id", "index", "recorded_at"]
        indexes = [
            models.Index(fields=["job", "index"], name="partitionrun_job_index"),
            # Every timeline and chart query is "one engine, settled since t".
            models.Index(fields=["engine_id", "ended_at"], name="partitionrun_engine_ended"),
        ]

    def __str__(self) -> str:
        return f"{self.job_id}#{self.index} attempt {self.attempt} {self.state}"


class EngineHost(models.Model):
    """An engine process that has run against this database; `last_heartbeat` says if it still does."""

    engine_id = models.CharField(max_length=128, unique=True)
    hostname = models.CharField(max_length=255, blank=True, default="")
    backend = models.CharField(max_length=16, blank=True, default="")
    workers = models.PositiveIntegerField(default=0)
    pid = models.IntegerField(null=True, blank=True)
    started_at = models.DateTimeField()
    last_heartbeat = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["engine_id"]

    def __str__(self) -> str:
        return self.engine_id


class OutcomeTally(models.Model):
    """Jobs that reached a final status, counted by engine, kind and outcome as they get there.

    The Prometheus counters read these few rows instead of counting a million jobs per scrape, and
    they survive restarts because they live in the database (gpu_engine/tallies.py keeps them)."""

    engine_id = models.CharField(max_length=128, blank=True, default="")
    proof_kind = models.CharField(max_length=32)
    outcome = models.CharField(max_length=16, choices=JobStatus.choices)
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["engine_id", "proof_kind", "outcome"],
                                               name="outcometally_unique")]

    def __str__(self) -> str:
        return f"{self.engine_id} {self.proof_kind} {self.outcome}: {self.count}"


class DurationTally(models.Model):
    """A cumulative histogram of one phase's durations (seconds) by engine and kind: the source of
    the `_duration_seconds` histograms. `buckets[i]` counts observations in (le[i-1], le[i]]."""

    engine_id = models.CharField(max_length=128, blank=True, default="")
    proof_kind = models.CharField(max_length=32)
    phase = models.CharField(max_length=16)
    count = models.BigIntegerField(default=0)
    sum_secs = models.FloatField(default=0.0)
    buckets = models.JSONField(default=list)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["engine_id", "proof_kind", "phase"],
                                               name="durationtally_unique")]

    def __str__(self) -> str:
        return f"{self.engine_id} {self.proof_kind} {self.phase}: {self.count}"


class TelemetryMinute(models.Model):
    """One minute of an engine's telemetry, rolled up by its heartbeat; kept TELEMETRY_RETENTION_DAYS.

    `gpu_ordinal` -1 is the engine row (queue depth, memory budget); other rows are one GPU each."""

    ENGINE_ROW = -1

    engine_id = models.CharField(max_length=128)
    minute = models.DateTimeField(help_text="Start of the minute (UTC).")
    gpu_ordinal = models.IntegerField(default=ENGINE_ROW)
    samples = models.PositiveIntegerField(default=0)
    util_pct = models.FloatField(null=True, blank=True, help_text="Mean over the minute.")
    util_max_pct = models.FloatField(null=True, blank=True)
    mem_used_bytes = models.BigIntegerField(null=True, blank=True, help_text="Highest over the minute.")
    mem_total_bytes = models.BigIntegerField(null=True, blank=True)
    queue_depth = models.IntegerField(null=True, blank=True, help_text="Highest over the minute.")

    class Meta:
        ordering = ["engine_id", "minute", "gpu_ordinal"]
        constraints = [models.UniqueConstraint(fields=["engine_id", "minute", "gpu_ordinal"],
                                               name="telemetryminute_unique")]
        indexes = [models.Index(fields=["minute"], name="telemetryminute_minute")]

    def __str__(self) -> str:
        return f"{self.engine_id} {self.minute:%Y-%m-%d %H:%M} gpu {self.gpu_ordinal}"


def _iso(value) -> str | None:
    return value.isoformat() if value else None
