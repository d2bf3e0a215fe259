"""A hypothesis state machine over the tracker API, checked against an independent model.

Legal calls are mirrored in a small model; the snapshot must equal the model after every step.
Illegal calls must raise TrackerError and change nothing.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import hypothesis.strategies as st
from hypothesis import assume, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.tracker import StatusTracker, TrackerError
from tests.tracker.invariants import FakeClock, check_invariants

WORKERS = ("w0", "w1")
GRACE = 10.0
ACTIVE = {"synthesizing", "gpu", "finalizing"}


@dataclass
class ModelJob:
    kind: str
    states: list[str]
    pworker: list[str | None]
    errors: list[str | None]
    finished_at: float | None = None
    success: bool | None = None


@dataclass
class ModelWorker:
    state: str = "idle"
    job: str | None = None
    partition: int | None = None


@dataclass
class Model:
    jobs: dict[str, ModelJob] = field(default_factory=dict)
    workers: dict[str, ModelWorker] = field(default_factory=lambda: {w: ModelWorker() for w in WORKERS})
    completed: Counter = field(default_factory=Counter)
    failed: Counter = field(default_factory=Counter)

    def release(self, wid: str | None, job: str, p: int) -> None:
        w = self.workers.get(wid) if wid is not None else None
        if w is not None and w.state == "proving" and (w.job, w.partition) == (job, p):
            self.workers[wid] = ModelWorker()


class TrackerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.t = StatusTracker(clock=self.clock, grace_secs=GRACE)
        self.t.register_workers([(w, 0) for w in WORKERS])
        self.m = Model()
        self.next_id = 0

    def parts(self, *states: str) -> list[tuple[str, int]]:
        return [(j, p) for j, mj in self.m.jobs.items() for p, s in enumerate(mj.states) if s in states]

    # ---- legal calls ------------------------------------------------------------------------

    @rule(kind=st.sampled_from(sorted(PROOF_KINDS)), total=st.integers(1, 3))
    def register_job(self, kind: str, total: int) -> None:
        job = f"ps-{kind}-{self.next_id}-" + "x" * (self.next_id % 40)
        self.next_id += 1
        self.t.register_job(job, kind, total)
        self.m.jobs[job] = ModelJob(kind, ["pending"] * total, [None] * total, [None] * total)

    @precondition(lambda self: self.parts("pending"))
    @rule(data=st.data())
    def synth_start(self, data: st.DataObject) -> None:
        job, p = data.draw(st.sampled_from(self.parts("pending")))
        self.t.partition_synth_start(job, p)
        self.m.jobs[job].states[p] = "synthesizing"

    @precondition(lambda self: self.parts("synthesizing"))
    @rule(data=st.data())
    def synth_end(self, data: st.DataObject) -> None:
        job, p = data.draw(st.sampled_from(self.parts("synthesizing")))
        self.t.partition_synth_end(job, p)
        self.m.jobs[job].states[p] = "synth_done"

    @precondition(lambda self: self.parts("synth_done", "pending"))
    @rule(data=st.data())
    def gpu_start(self, data: st.DataObject) -> None:
        free = [w for w, mw in self.m.workers.items() if mw.state != "proving"]
        assume(free)
        job, p = data.draw(st.sampled_from(self.parts("synth_done", "pending")))
        wid = data.draw(st.sampled_from(free))
        self.t.partition_gpu_start(job, p, wid)
        mj = self.m.jobs[job]
        mj.states[p], mj.pworker[p] = "gpu", wid
        self.m.workers[wid] = ModelWorker("proving", job, p)

    @precondition(lambda self: self.parts("gpu"))
    @rule(data=st.data())
    def finalize_start(self, data: st.DataObject) -> None:
        job, p = data.draw(st.sampled_from(self.parts("gpu")))
        self.finalize_one(job, p)

    @precondition(lambda self: self.parts("gpu") and self.parts("synth_done", "pending"))
    @rule(data=st.data())
    def handoff(self, data: st.DataObject) -> None:
        """Split proving in one step: hand the CPU tail off and take the next partition at once."""
        job, p = data.draw(st.sampled_from(self.parts("gpu")))
        self.finalize_one(job, p)
        wid = self.m.jobs[job].pworker[p]
        nxt, q = data.draw(st.sampled_from(self.parts("synth_done", "pending")))
        self.t.partition_gpu_start(nxt, q, wid)
        mj = self.m.jobs[nxt]
        mj.states[q], mj.pworker[q] = "gpu", wid
        self.m.workers[wid] = ModelWorker("proving", nxt, q)

    @precondition(lambda self: self.parts("gpu") and self.parts("synth_done", "pending"))
    @rule(data=st.data())
    def cuzk_handoff(self, data: st.DataObject) -> None:
        """cuzk's sequence: the worker takes its next partition with no finalize_start for the last."""
        job, p = data.draw(st.sampled_from(self.parts("gpu")))
        wid = self.m.jobs[job].pworker[p]
        nxt, q = data.draw(st.sampled_from(self.parts("synth_done", "pending")))
        self.t.partition_gpu_start(nxt, q, wid)
        self.m.jobs[job].states[p] = "finalizing"
        mj = self.m.jobs[nxt]
        mj.states[q], mj.pworker[q] = "gpu", wid
        self.m.workers[wid] = ModelWorker("proving", nxt, q)

    def finalize_one(self, job: str, p: int) -> None:
        wid = self.m.jobs[job].pworker[p]
        self.t.partition_finalize_start(job, p, wid)
        self.m.jobs[job].states[p] = "finalizing"
        self.m.release(wid, job, p)

    @precondition(lambda self: self.parts("gpu", "finalizing"))
    @rule(data=st.data())
    def gpu_end(self, data: st.DataObject) -> None:
        job, p = data.draw(st.sampled_from(self.parts("gpu", "finalizing")))
        wid = self.m.jobs[job].pworker[p]
        self.t.partition_gpu_end(job, p, wid)
        self.m.jobs[job].states[p] = "done"
        self.m.release(wid, job, p)

    @precondition(lambda self: self.parts("pending", "synthesizing", "synth_done", "gpu", "finalizing"))
    @rule(data=st.data(), error=st.sampled_from(["oom", "CUDA_ERROR_LAUNCH_FAILED", "bad proof"]))
    def fail(self, data: st.DataObject, error: str) -> None:
        job, p = data.draw(st.sampled_from(self.parts("pending", "synthesizing", "synth_done", "gpu",
                                                      "finalizing")))
        self.t.partition_failed(job, p, error)
        mj = self.m.jobs[job]
        mj.states[p], mj.errors[p] = "failed", error
        self.m.release(mj.pworker[p], job, p)

    @precondition(lambda self: self.parts("failed", "gpu", "synth_done"))
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        cands = [(j, p) for j, p in self.parts("failed", "gpu", "synth_done")
                 if self.m.jobs[j].finished_at is None]
        assume(cands)
        job, p = data.draw(st.sampled_from(cands))
        self.t.partition_retry(job, p)
        mj = self.m.jobs[job]
        self.m.release(mj.pworker[p], job, p)
        mj.states[p], mj.pworker[p], mj.errors[p] = "pending", None, None

    @precondition(lambda self: any(mj.finished_at is None for mj in self.m.jobs.values()))
    @rule(data=st.data())
    def complete(self, data: st.DataObject) -> None:
        job = data.draw(st.sampled_from([j for j, mj in self.m.jobs.items() if mj.finished_at is None]))
        mj = self.m.jobs[job]
        success = all(s == "done" for s in mj.states) and data.draw(st.booleans())
        self.t.job_completed(job, success)
        mj.finished_at, mj.success = self.clock.now, success
        (self.m.completed if success else self.m.failed)[mj.kind] += 1

    @rule(wid=st.sampled_from(WORKERS))
    def worker_error(self, wid: str) -> None:
        self.t.worker_error(wid, "context lost")
        mw = self.m.workers[wid]
        if mw.state == "proving":
            mj = self.m.jobs[mw.job]
            mj.states[mw.partition], mj.errors[mw.partition] = "failed", f"worker {wid!r}: context lost"
        self.m.workers[wid] = ModelWorker("error")

    @rule(wid=st.sampled_from(WORKERS))
    def worker_recovered(self, wid: str) -> None:
        self.t.worker_recovered(wid)
        if self.m.workers[wid].state == "error":
            self.m.workers[wid] = ModelWorker()

    @rule(secs=st.sampled_from([0.5, 3.0, 11.0]))
    def advance(self, secs: float) -> None:
        self.clock.advance(secs)

    # ---- illegal calls ------------------------------------------------------------------------

    @precondition(lambda self: self.m.jobs)
    @rule(data=st.data(), op=st.sampled_from(["synth_start", "synth_end", "finalize_start", "gpu_end",
                                              "failed", "retry"]))
    def illegal_call_changes_nothing(self, data: st.DataObject, op: str) -> None:
        job = data.draw(st.sampled_from(sorted(self.m.jobs)))
        mj = self.m.jobs[job]
        p = data.draw(st.integers(-1, len(mj.states)))
        wid = data.draw(st.sampled_from(WORKERS))
        state = mj.states[p] if 0 <= p < len(mj.states) else None
        legal = state is not None and {
            "synth_start": state == "pending",
            "synth_end": state == "synthesizing",
            "finalize_start": state == "gpu" and mj.pworker[p] == wid,
            "gpu_end": (state == "gpu" and mj.pworker[p] == wid) or state == "finalizing",
            "failed": state != "done",
            "retry": state != "done" and mj.finished_at is None,
        }[op]
        assume(not legal)
        seq = self.t.seq
        call = {
            "synth_start": lambda: self.t.partition_synth_start(job, p),
            "synth_end": lambda: self.t.partition_synth_end(job, p),
            "finalize_start": lambda: self.t.partition_finalize_start(job, p, wid),
            "gpu_end": lambda: self.t.partition_gpu_end(job, p, wid),
            "failed": lambda: self.t.partition_failed(job, p, "x"),
            "retry": lambda: self.t.partition_retry(job, p),
        }[op]
        try:
            call()
        except TrackerError:
            pass
        else:
            raise AssertionError(f"{op} on {job!r}/{p} in {state!r} did not raise")
        assert self.t.seq == seq

    # ---- the check ------------------------------------------------------------------------

    @invariant()
    def snapshot_matches_model(self) -> None:
        snap = self.t.snapshot()
        check_invariants(snap)
        now = self.clock.now
        for job in [j for j, mj in self.m.jobs.items() if mj.finished_at is not None
                    and mj.finished_at + GRACE <= now and not ACTIVE & set(mj.states)]:
            del self.m.jobs[job]
        assert [p["job_id"] for p in snap["pipelines"]] == list(self.m.jobs)
        for pipe in snap["pipelines"]:
            mj = self.m.jobs[pipe["job_id"]]
            assert [q["state"] for q in pipe["partitions"]] == mj.states
            assert [q["worker_id"] for q in pipe["partitions"]] == mj.pworker
            assert [q["error"] for q in pipe["partitions"]] == [
                e if s == "failed" else None for s, e in zip(mj.states, mj.errors)]
            if mj.finished_at is not None:
                assert pipe["status"] == ("done" if mj.success else "failed")
        for w in snap["gpu_workers"]:
            mw = self.m.workers[w["worker_id"]]
            assert (w["state"], w["current_job"], w["current_partition"]) == (mw.state, mw.job, mw.partition)
        assert snap["counters"]["completed_by_kind"] == dict(self.m.completed)
        assert snap["counters"]["failed_by_kind"] == dict(self.m.failed)


TrackerMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=30, deadline=None)
test_tracker_state_machine = TrackerMachine.TestCase
