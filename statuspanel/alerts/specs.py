"""The built-in rules: their names, severities, defaults and the ranges a setting may take.

One table, read by the rules (defaults), the forms (the ranges: one rule set for the admin and the
commands), the evaluator (the `for` durations) and the docs. A threshold's meaning is the rule's own
(`unit` says it); `None` ranges mean the rule has no such knob.
"""
from __future__ import annotations

from dataclasses import dataclass

WARNING, CRITICAL = "warning", "critical"
PENDING, FIRING, RESOLVED = "pending", "firing", "resolved"
STATES = (PENDING, FIRING, RESOLVED)
OPEN_STATES = (PENDING, FIRING)


@dataclass(frozen=True)
class RuleSpec:
    name: str
    title: str
    severity: str
    threshold: float
    threshold_min: float
    threshold_max: float
    unit: str
    for_secs: float
    per_engine: bool  # per-engine overrides make sense (not for the deployment-wide queue)
    help: str


MAX_FOR_SECS = 24 * 3600.0

RULES: dict[str, RuleSpec] = {spec.name: spec for spec in (
    RuleSpec("gpu-idle-while-queued", "GPU idle while work waits", WARNING, 1, 1, 1_000_000, "jobs waiting",
             60.0, True, "A GPU worker idle while its engine has at least `threshold` jobs it could take."),
    RuleSpec("partition-stuck", "Partition stuck in a phase", WARNING, 5, 1.5, 1000, "x p95",
             0.0, True, "A partition in one phase longer than `threshold` x the p95 of its kind and phase "
             "over 24 h (at least ALERTS_STUCK_FLOOR_SECS; ALERTS_STUCK_CEILING_SECS without history)."),
    RuleSpec("tracker-inconsistent", "Tracker contradicts itself", CRITICAL, 3, 1, 100, "snapshots in a row",
             0.0, True, "The consistency check flags the same violation on `threshold` snapshots in a row."),
    RuleSpec("source-down", "Fleet source down", CRITICAL, 0, 0, 0, "",
             120.0, True, "A fleet source unreachable or malformed."),
    RuleSpec("engine-down", "Local engine down", CRITICAL, 60, 5, 86_400, "s without heartbeat",
             0.0, True, "A local engine's heartbeat older than `threshold` seconds (and not stopped cleanly)."),
    RuleSpec("failure-burst", "Failures pile up", WARNING, 3, 1, 100_000, "failures in the window",
             0.0, True, "At least `threshold` failed jobs or partitions of one engine within "
             "ALERTS_FAILURE_WINDOW_SECS (10 minutes)."),
    RuleSpec("memory-pressure", "Memory pressure", WARNING, 90, 1, 100, "% of the budget",
             300.0, True, "Memory budget use above `threshold` %, or a partition waiting for admission longer "
             "than ALERTS_ADMISSION_WAIT_SECS."),
    RuleSpec("queue-wait", "Work waits too long", WARNING, 1800, 10, 30 * 86_400, "s waited",
             0.0, False, "The oldest queued job of a kind has waited longer than `threshold` seconds."),
    RuleSpec("requeue-loop", "Job claimed again and again", WARNING, 3, 2, 1000, "claims",
             0.0, False, "A job not finished after `threshold` claims (lost leases, retries after failures)."),
)}

QUEUE_ENGINE = "queue"  # the engine label of alerts about the shared durable queue


@dataclass(frozen=True)
class Effective:
    """A rule's setting for one engine after the overrides: what the evaluator applies."""

    enabled: bool
    threshold: float
    for_secs: float
