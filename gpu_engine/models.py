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
        """Compute time: claimed (started) to finished."""
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None

    def queue_wait_secs(self) -> float | None:
        """Time in the queue: submitted to claimed (its last claim, when a lost lease requeued it)."""
        if self.submitted_at and self.claimed_at:
            return max(0.0, (self.claimed_at - self.submitted_at).total_seconds())
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


class HistoryRollup(models.Model):
    """Settled work of one engine counted per period, kind, measure and latency bucket, written by its
    history writer as runs and jobs settle (gpu_engine/history_rollup.py): the 24 h and 7 d charts sum
    a few thousand of these rows instead of reading a million runs. Kept TELEMETRY_RETENTION_DAYS.

    `span_secs` 3600 and 86400 rows hold latency histograms (`measure` "partition" or "job", `bucket`
    a logarithmic bucket of the seconds); 60 and 3600 rows with `measure` "done" count finished jobs
    (`bucket` 0) for the throughput bars."""

    engine_id = models.CharField(max_length=128)
    span_secs = models.IntegerField(help_text="60 (a minute), 3600 (an hour) or 86400 (a UTC day).")
    period = models.DateTimeField(help_text="Start of the period (UTC).")
    measure = models.CharField(max_length=16)
    proof_kind = models.CharField(max_length=32)
    bucket = models.IntegerField(default=0)
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(
            fields=["engine_id", "span_secs", "measure", "period", "proof_kind", "bucket"],
            name="historyrollup_unique")]
        indexes = [models.Index(fields=["period"], name="historyrollup_period")]

    def __str__(self) -> str:
        return f"{self.engine_id} {self.period:%Y-%m-%d %H:%M}/{self.span_secs}s {self.measure} {self.proof_kind}"


class Circuit(models.Model):
    """A registered circom circuit: a proof kind of its own (gpu_engine/circom/registry.py).

    The files live under settings.CIRCUITS_DIR, named by their content hash; the paths here are
    relative to it. The header numbers are read from the zkey at registration."""

    name = models.CharField(max_length=32, unique=True, help_text="The proof kind's wire name.")
    label = models.CharField(max_length=200, help_text="The full label the panel shows.")
    curve = models.CharField(max_length=16, default="bls12381")
    zkey_sha256 = models.CharField(max_length=64)
    zkey_file = models.CharField(max_length=300)
    key_file = models.CharField(max_length=300, help_text="The converted key (points and coefficients).")
    wasm_file = models.CharField(max_length=300, blank=True, default="")
    sym_file = models.CharField(max_length=300, blank=True, default="")
    r1cs_file = models.CharField(max_length=300, blank=True, default="")
    num_constraints = models.PositiveIntegerField()
    num_wires = models.PositiveIntegerField()
    num_public = models.PositiveIntegerField(help_text="Outputs and public inputs.")
    domain_size = models.PositiveIntegerField()
    input_signals = models.JSONField(default=dict, blank=True, help_text="{signal: values}, from the wasm.")
    vkey = models.JSONField(help_text="snarkjs's verification_key.json.")
    registered_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def to_dict(self) -> dict:
        return {
            "name": self.name, "label": self.label, "curve": self.curve, "zkey_sha256": self.zkey_sha256,
            "constraints": self.num_constraints, "wires": self.num_wires, "public_signals": self.num_public,
            "domain_size": self.domain_size, "accepts_inputs": bool(self.wasm_file),
            "input_signals": self.input_signals, "checks_constraints": bool(self.r1cs_file),
            "registered_at": _iso(self.registered_at),
        }


class CircuitJob(models.Model):
    """What a circuit job proves: one stored item (a .wtns or an input .json) per partition."""

    WITNESSES, INPUTS = "witnesses", "inputs"

    job = models.OneToOneField(ProofJob, on_delete=models.CASCADE, related_name="circuit_job")
    circuit = models.ForeignKey(Circuit, on_delete=models.PROTECT, related_name="jobs")
    source = models.CharField(max_length=16, choices=[(WITNESSES, "witnesses"), (INPUTS, "inputs")])
    items_dir = models.CharField(max_length=300, help_text="Relative to settings.CIRCUITS_DIR.")

    def __str__(self) -> str:
        return f"{self.job.job_id} ({self.circuit.name}, {self.source})"


def _iso(value) -> str | None:
    return value.isoformat() if value else None
