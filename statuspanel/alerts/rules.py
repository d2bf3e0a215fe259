"""The eight built-in rules, each a pure function of typed inputs: the snapshots and the facts.

A rule returns the conditions true now, one per (engine, subject); the evaluator turns them into
alerts (pending until the rule's `for` has held, then firing, resolved when no longer returned). A
message may hold `{held}`: the evaluator writes how long the condition has held ("idle for 4m 12s").
Snapshots are read defensively (foreign engines omit keys; docs/SNAPSHOT.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence, cast

from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.schema import SnapshotDocument
from gpu_engine.vocabulary import IDLE
from statuspanel.alerts.specs import QUEUE_ENGINE, Effective
from statuspanel.fleet.vocabulary import SOURCE_DOWN_STATES

OPEN_PHASES = {"synthesizing": "synth_ms", "gpu": "gpu_ms", "finalizing": "finalize_ms"}


@dataclass(frozen=True)
class Condition:
    rule: str
    engine: str
    subject: str
    value: float | None
    message: str


@dataclass(frozen=True)
class Failure:
    at: float          # unix time
    what: str          # "job J" or "J#3"
    reason: str


@dataclass(frozen=True)
class Requeue:
    job_id: str
    engine: str
    attempts: int
    errors: tuple[str, ...]


@dataclass
class Facts:
    """What the database (and the evaluator's own observations of foreign engines) add to snapshots."""

    now: float = 0.0
    queued_by_kind: dict[str, int] = field(default_factory=dict)
    oldest_queued: dict[str, tuple[str, float]] = field(default_factory=dict)   # kind -> (job, age s)
    failures: dict[str, list[Failure]] = field(default_factory=dict)            # engine -> in the window
    requeues: list[Requeue] = field(default_factory=list)
    heartbeat_ages: dict[str, float] = field(default_factory=dict)              # running local engines
    p95_secs: dict[tuple[str, str], float] = field(default_factory=dict)       # (kind, phase state)
    consistency_streaks: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    stuck_floor_secs: float = 60.0
    stuck_ceiling_secs: float = 3600.0
    admission_wait_secs: float = 300.0
    failure_window_secs: float = 600.0


Setting = Callable[[str, str], Effective]  # (rule, engine) -> the effective setting


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _list(snap: SnapshotDocument, key: str) -> list[dict[str, Any]]:
    return [x for x in (snap.get(key) or ()) if isinstance(x, dict)] if isinstance(snap.get(key), list) else []


def engine_of(snap: SnapshotDocument) -> str:
    return str(snap.get("engine_id") or "?")


def is_fleet(snap: SnapshotDocument) -> bool:
    return isinstance(snap.get("source"), dict)


def _online(snap: SnapshotDocument) -> bool:
    return not is_fleet(snap) or snap["source"].get("state") == "online"


def _watched(snaps: Sequence[SnapshotDocument]) -> Iterator[tuple[str, SnapshotDocument]]:
    """(engine, snapshot) of the snapshots whose contents a rule may judge: a fleet source's only while
    it is online (an unreachable one's last document is stale; source-down speaks for it)."""
    return ((engine_of(snap), snap) for snap in snaps if _online(snap))


def _partitions(snap: SnapshotDocument) -> Iterator[tuple[dict[str, Any], dict[str, Any], str]]:
    """Every partition of the snapshot's pipelines: (pipeline, partition, its subject `job#index`)."""
    for pipe in _list(snap, "pipelines"):
        for part in _list(pipe, "partitions"):
            yield pipe, part, f"{pipe.get('job_id')}#{part.get('index')}"


def label(kind: str) -> str:
    spec = PROOF_KINDS.get(kind)
    return spec.label if spec is not None else kind


def fmt_secs(secs: float) -> str:
    secs = int(max(secs, 0))
    if secs < 60:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m {secs % 60:02d}s"
    return f"{secs // 3600}h {secs % 3600 // 60:02d}m"


def gpu_idle_while_queued(snaps: Sequence[SnapshotDocument], facts: Facts, setting: Setting) -> list[Condition]:
    out = []
    for engine, snap in _watched(snaps):
        if is_fleet(snap):
            raw_counters = snap.get("counters")
            counters: dict[str, Any] = raw_counters if isinstance(raw_counters, dict) else {}
            # The daemon's queue depth, or its pipelines still queued (they may be counted in it: the larger).
            depth = max(int(_num(counters.get("queue_depth")) or 0),
                        sum(1 for p in _list(snap, "pipelines") if p.get("status") == "queued"))
            what = f"{depth} jobs wait"
        else:
            depth = sum(facts.queued_by_kind.values())
            kinds = sorted(facts.queued_by_kind, key=lambda k: -facts.queued_by_kind[k])
            what = f"{depth} {label(kinds[0]) if len(kinds) == 1 else 'queued'} jobs wait" if kinds else ""
        if depth < setting("gpu-idle-while-queued", engine).threshold:
            continue
        for worker in _list(snap, "gpu_workers"):
            if worker.get("state") == IDLE:
                subject = f"W{worker.get('worker_id')}"
                out.append(Condition("gpu-idle-while-queued", engine, subject, depth,
                                     f"{subject} on {engine} idle for {{held}} while {what}"))
    return out


def partition_stuck(snaps: Sequence[SnapshotDocument], facts: Facts, setting: Setting) -> list[Condition]:
    out = []
    for engine, snap in _watched(snaps):
        factor = setting("partition-stuck", engine).threshold
        for pipe, part, subject in _partitions(snap):
            phase = part.get("state")
            ms = _num(part.get(OPEN_PHASES.get(phase, ""))) if phase in OPEN_PHASES else None
            if ms is None:
                continue
            kind = str(pipe.get("proof_kind") or "")
            p95 = facts.p95_secs.get((kind, cast(str, phase)))  # a number came from an OPEN_PHASES key
            limit = facts.stuck_ceiling_secs if p95 is None else max(facts.stuck_floor_secs, factor * p95)
            secs = ms / 1000.0
            if secs > limit:
                usual = f"p95 {fmt_secs(p95)}" if p95 is not None else "no history"
                out.append(Condition("partition-stuck", engine, subject, secs,
                                     f"{subject} ({label(kind)}) on {engine} in {phase} for {fmt_secs(secs)} "
                                     f"(limit {fmt_secs(limit)}, {usual})"))
    return out


def tracker_inconsistent(snaps: Sequence[SnapshotDocument], facts: Facts, setting: Setting) -> list[Condition]:
    return [Condition("tracker-inconsistent", engine, subject, streak,
                      f"{engine}: {message} on {streak} snapshots in a row")
            for (engine, subject), (streak, message) in sorted(facts.consistency_streaks.items())
            if streak >= setting("tracker-inconsistent", engine).threshold]


def source_down(snaps: Sequence[SnapshotDocument], facts: Facts, setting: Setting) -> list[Condition]:
    out = []
    for snap in snaps:
        source = snap.get("source")
        if isinstance(source, dict) and source.get("state") in SOURCE_DOWN_STATES:
            engine = engine_of(snap)
            error = source.get("error") or source.get("reason") or source.get("state")
            out.append(Condition("source-down", engine, engine, None,
                                 f"source {engine} {source.get('state')} for {{held}}: {error}"))
    return out


def engine_down(snaps: Sequence[SnapshotDocument], facts: Facts, setting: Setting) -> list[Condition]:
    return [Condition("engine-down", engine, engine, age, f"engine {engine}: no heartbeat for {fmt_secs(age)}")
            for engine, age in sorted(facts.heartbeat_ages.items()) if age > setting("engine-down", engine).threshold]


def failure_burst(snaps: Sequence[SnapshotDocument], facts: Facts, setting: Setting) -> list[Condition]:
    out = []
    window = fmt_secs(facts.failure_window_secs)
    for engine, failures in sorted(facts.failures.items()):
        if failures and len(failures) >= setting("failure-burst", engine).threshold:
            last = sorted(failures, key=lambda f: f.at)[-3:]
            reasons = "; ".join(f"{f.what}: {f.reason}" for f in reversed(last) if f.reason) or "no reason recorded"
            out.append(Condition("failure-burst", engine, "failures", len(failures),
                                 f"{len(failures)} failures on {engine} within {window}; last: {reasons}"))
    return out


def memory_pressure(snaps: Sequence[SnapshotDocument], facts: Facts, setting: Setting) -> list[Condition]:
    out = []
    for engine, snap in _watched(snaps):
        raw_mem = snap.get("memory")
        mem: dict[str, Any] = raw_mem if isinstance(raw_mem, dict) else {}
        used, total = _num(mem.get("used_bytes")), _num(mem.get("total_bytes"))
        if used is not None and total:
            pct = 100.0 * used / total
            if pct > setting("memory-pressure", engine).threshold:
                out.append(Condition("memory-pressure", engine, "memory", pct,
                                     f"{engine}: memory budget {pct:.0f} % used for {{held}}"))
        for pipe, part, subject in _partitions(snap):
            age = _num(pipe.get("started_secs_ago"))
            if (part.get("state") == "pending" and pipe.get("status") in ("queued", "running") and age is not None
                    and age > facts.admission_wait_secs):
                out.append(Condition("memory-pressure", engine, subject, age,
                                     f"{subject} on {engine} waits for admission ({fmt_secs(age)} since claim)"))
    return out


def queue_wait(snaps: Sequence[SnapshotDocument], facts: Facts, setting: Setting) -> list[Condition]:
    out = []
    limit = setting("queue-wait", QUEUE_ENGINE).threshold
    for kind, (job_id, age) in sorted(facts.oldest_queued.items()):
        if age > limit:
            out.append(Condition("queue-wait", QUEUE_ENGINE, kind, age,
                                 f"{facts.queued_by_kind.get(kind, 1)} {label(kind)} jobs queued; the oldest, "
                                 f"{job_id}, has waited {fmt_secs(age)}"))
    return out


def requeue_loop(snaps: Sequence[SnapshotDocument], facts: Facts, setting: Setting) -> list[Condition]:
    out = []
    limit = setting("requeue-loop", QUEUE_ENGINE).threshold
    for item in facts.requeues:
        if item.attempts >= limit:
            errors = "; ".join(item.errors) or "no error recorded"
            out.append(Condition("requeue-loop", QUEUE_ENGINE, item.job_id, item.attempts,
                                 f"job {item.job_id} claimed {item.attempts} times (last by {item.engine or '-'}); "
                                 f"last errors: {errors}"))
    return out


RULE_FUNCTIONS: dict[str, Callable[[Sequence[SnapshotDocument], Facts, Setting], list[Condition]]] = {
    "gpu-idle-while-queued": gpu_idle_while_queued,
    "partition-stuck": partition_stuck,
    "tracker-inconsistent": tracker_inconsistent,
    "source-down": source_down,
    "engine-down": engine_down,
    "failure-burst": failure_burst,
    "memory-pressure": memory_pressure,
    "queue-wait": queue_wait,
    "requeue-loop": requeue_loop,
}
