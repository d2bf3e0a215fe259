"""What the evaluator learns by watching snapshots over time (a snapshot alone cannot say it).

- consistency streaks: how many distinct snapshots in a row (by `seq`) flagged the same violation,
  so `tracker-inconsistent` fires on a live race, not on one sampling instant;
- failures of foreign engines: increases of `counters.total_failed` within the window (their jobs
  are not in our database);
- observed phase durations: the last duration seen of each partition phase that ended, so
  `partition-stuck` has a usual duration for fleet kinds with no stored history.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Sequence, cast

from gpu_engine.schema import SnapshotDocument
from gpu_engine.tracker.consistency import check_consistency
from statuspanel.alerts.facts import percentile
from statuspanel.alerts.rules import OPEN_PHASES, Failure, engine_of, is_fleet

OBSERVED_SAMPLES = 500


class Observations:
    def __init__(self) -> None:
        self._last_seq: dict[str, Any] = {}
        self.streaks: dict[tuple[str, str], tuple[int, str]] = {}
        self._failed_samples: dict[str, deque[tuple[float, int]]] = {}
        self._open_phase: dict[tuple[str, str, int], tuple[str, str, float]] = {}
        self._durations: dict[tuple[str, str], deque[float]] = {}

    def observe(self, snaps: Sequence[SnapshotDocument], now: float, window_secs: float) -> None:
        live = set()
        for snap in snaps:
            engine = engine_of(snap)
            live.add(engine)
            seq = snap.get("seq")
            if seq is not None and self._last_seq.get(engine) == seq:
                continue  # the same snapshot seen again: no new evidence
            self._last_seq[engine] = seq
            online = not is_fleet(snap) or snap["source"].get("state") == "online"
            if online:
                self._observe_consistency(engine, snap)
                self._observe_phases(engine, snap)
            if is_fleet(snap):
                self._observe_failed(engine, snap, now, window_secs)
        for engine in [e for e in self._last_seq if e not in live]:
            self.forget(engine)

    def forget(self, engine: str) -> None:
        self._last_seq.pop(engine, None)
        self._failed_samples.pop(engine, None)
        for key in [k for k in self.streaks if k[0] == engine]:
            del self.streaks[key]
        for phase_key in [k for k in self._open_phase if k[0] == engine]:
            del self._open_phase[phase_key]

    def _observe_consistency(self, engine: str, snap: SnapshotDocument) -> None:
        problems = snap.get("consistency")
        if not isinstance(problems, list):
            problems = check_consistency(snap)
        seen = {}
        for p in problems:
            if isinstance(p, dict):
                subject = f"{p.get('job_id')}#{p.get('partition')}"
                worker = p.get("worker_id")
                who = f" (W{worker})" if worker is not None else ""
                seen[subject] = f"{subject}{who} {p.get('problem')}: {p.get('message')}"
        for key in [k for k in self.streaks if k[0] == engine and k[1] not in seen]:
            del self.streaks[key]
        for subject, message in seen.items():
            count = self.streaks.get((engine, subject), (0, ""))[0]
            self.streaks[(engine, subject)] = (count + 1, message)

    def _observe_failed(self, engine: str, snap: SnapshotDocument, now: float, window_secs: float) -> None:
        raw_counters = snap.get("counters")
        counters: dict[str, Any] = raw_counters if isinstance(raw_counters, dict) else {}
        failed = counters.get("total_failed")
        if not isinstance(failed, int) or isinstance(failed, bool):
            return
        samples = self._failed_samples.setdefault(engine, deque())
        if samples and failed < samples[-1][1]:
            samples.clear()  # the engine restarted: its counters began again
        samples.append((now, failed))
        while len(samples) > 1 and samples[1][0] < now - window_secs:
            samples.popleft()

    def fleet_failures(self, engine: str) -> list[Failure]:
        """The failures of a foreign engine within the window (no reasons: its counters carry none)."""
        samples = self._failed_samples.get(engine)
        if not samples:
            return []
        count = samples[-1][1] - samples[0][1]
        at = samples[-1][0]
        return [Failure(at, "a job", "") for _ in range(count)]

    def _observe_phases(self, engine: str, snap: SnapshotDocument) -> None:
        current: set[tuple[str, str, int]] = set()
        for pipe in snap.get("pipelines") or ():
            if not isinstance(pipe, dict):
                continue
            kind = str(pipe.get("proof_kind") or "")
            for part in pipe.get("partitions") or ():
                if not isinstance(part, dict) or not isinstance(part.get("index"), int):
                    continue
                key = (engine, str(pipe.get("job_id")), part["index"])
                phase = part.get("state")
                previous = self._open_phase.get(key)
                if previous is not None and previous[1] != phase:
                    self._durations.setdefault((previous[0], previous[1]), deque(maxlen=OBSERVED_SAMPLES)).append(
                        previous[2])
                ms = part.get(OPEN_PHASES.get(phase, ""), None) if phase in OPEN_PHASES else None
                if isinstance(ms, (int, float)) and not isinstance(ms, bool):
                    # a number came from OPEN_PHASES' column, so `phase` is one of its (str) keys
                    self._open_phase[key] = (kind, cast(str, phase), ms / 1000.0)
                    current.add(key)
        for key in [k for k in self._open_phase if k[0] == engine and k not in current]:
            kind, phase, secs = self._open_phase.pop(key)
            self._durations.setdefault((kind, phase), deque(maxlen=OBSERVED_SAMPLES)).append(secs)

    def observed_p95(self) -> dict[tuple[str, str], float]:
        return {key: percentile(sorted(values), 0.95) for key, values in self._durations.items() if len(values) >= 5}
