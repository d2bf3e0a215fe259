"""Chaos: runprover proving a queue of 40 mixed jobs is stopped at 15 random moments and restarted each
time, either killed outright (SIGKILL to the engine alone) or stopped as systemd does (SIGTERM to the
whole process group). At the end every job is done exactly once, every bundle verifies against the
engine's own key and is bound to its job, and no process of any run is left; the group stops also
record no retry and log no error. The figures (restarts, attempts, drain times) are printed: run with
`-s` to read them."""
from __future__ import annotations

import json
import os
import random
import signal
import statistics
import time

import psutil
import pytest

from gpu_engine.groth16.api import check_bundle, load_params
from gpu_engine.kinds import PROOF_KINDS
from tests.runprover.helpers import Site, log_troubles, unit_stop_settings, wait_until

MIX = {"porep-c2": 8, "snap-update": 6, "window-post": 13, "winning-post": 13}  # 40 jobs, 202 partitions
STOPS = 15
ENGINE = "engine-chaos"


@pytest.fixture
def site(tmp_path, params_dir) -> Site:
    # Killed claims count as attempts: enough of them that no job runs out while being killed.
    return Site(tmp_path, params_dir, JOB_MAX_ATTEMPTS="100")


def submit_mix(site: Site) -> dict[str, str]:
    jobs = {}
    for kind, count in MIX.items():
        site.manage("submitproof", "--kind", kind, "--count", str(count), "--job-id", f"chaos-{kind}")
        jobs.update({f"chaos-{kind}-{i}": kind for i in range(1, count + 1)})
    return jobs


def engine_up(site: Site, proc) -> bool:
    """The engine registered itself: it has started, with its signal handlers in place."""
    return bool(site.query("SELECT 1 FROM gpu_engine_enginehost WHERE engine_id = ? AND pid = ? "
                           "AND stopped_at IS NULL", ENGINE, proc.pid))


def unfinished(site: Site) -> int:
    return site.query("SELECT count(*) FROM gpu_engine_proofjob WHERE status != 'done'")[0][0]


def group_of(proc) -> list[psutil.Process]:
    try:
        return [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def leftovers(sessions: set[int]) -> list[int]:
    """Live processes in any of the runs' sessions (each run is a session and group of its own)."""
    left = []
    for pid in psutil.pids():
        try:
            if os.getsid(pid) in sessions and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                left.append(pid)
        except (ProcessLookupError, PermissionError, psutil.NoSuchProcess):
            pass
    return left


def check_outcome(site: Site, jobs: dict[str, str]) -> dict[str, int]:
    """Every job done exactly once, its bundle bound to it and valid under the engine's key."""
    rows = site.query("SELECT id, job_id, proof_kind, status, attempts, bundle, vk_fingerprint FROM gpu_engine_proofjob")
    assert {r[1] for r in rows} == set(jobs)
    keys = {kind: load_params(kind, site.params_dir).vk for kind in PROOF_KINDS}
    for pk, job_id, kind, status, attempts, bundle, fingerprint in rows:
        assert status == "done", (job_id, status)
        bundle = json.loads(bundle)
        assert (bundle["job_id"], bundle["proof_kind"]) == (job_id, kind)
        verdict = check_bundle(bundle, keys[kind])
        assert verdict.ok, (job_id, verdict)
        assert fingerprint == keys[kind].fingerprint()
        # The final claim's rows: each partition proved once; earlier claims' rows carry lower attempts.
        final = site.query("SELECT \"index\" FROM gpu_engine_partitionrun WHERE job_id = ? AND state = 'done' "
                           "AND attempt = ?", pk, attempts)
        assert sorted(i for (i,) in final) == list(range(PROOF_KINDS[kind].partitions)), job_id
        assert site.query("SELECT count(*) FROM gpu_engine_partitionrun WHERE job_id = ? AND attempt > ?",
                          pk, attempts)[0][0] == 0
    tallies = dict(site.query("SELECT outcome, sum(count) FROM gpu_engine_outcometally GROUP BY outcome"))
    assert tallies == {"done": len(jobs)}, tallies  # each job reached `done` once, and nothing else
    return {"jobs": len(rows), "claims": sum(r[4] for r in rows), "max_attempts": max(r[4] for r in rows),
            "partition_runs": site.query("SELECT count(*) FROM gpu_engine_partitionrun")[0][0]}


def finish(site: Site, sessions: set[int], log_name: str) -> None:
    """A last run proves whatever is left (if anything), then is stopped like the others."""
    if unfinished(site) == 0:
        return
    proc = site.start("--engine-id", ENGINE, log_name=log_name, group=True, append=True)
    sessions.add(proc.pid)
    try:
        wait_until(lambda: engine_up(site, proc), timeout=120, proc=proc)
        wait_until(lambda: unfinished(site) == 0, timeout=600, interval=0.5, proc=proc)
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(60) == 0, site.log(log_name)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.mark.slow
@pytest.mark.chaos
def test_sigkill_at_random_moments(site):
    rng = random.Random(int(os.environ.get("CHAOS_SEED", time.time())))
    jobs = submit_mix(site)
    sessions: set[int] = set()
    kills_while_holding = 0
    for _ in range(STOPS):  # all of them, even once the queue is empty: killing an idle engine is a moment too
        proc = site.start("--engine-id", ENGINE, log_name="chaos.log", group=True, append=True)
        sessions.add(proc.pid)
        time.sleep(rng.uniform(1.0, 9.0))
        processes = group_of(proc)
        kills_while_holding += bool(site.query("SELECT 1 FROM gpu_engine_proofjob WHERE status = 'running'"))
        proc.send_signal(signal.SIGKILL)  # the engine alone: its pool children must go by themselves
        proc.wait(10)
        gone, alive = psutil.wait_procs(processes, timeout=15)
        assert not alive, f"orphans after SIGKILL: {[p.pid for p in alive]}"
    finish(site, sessions, "chaos.log")
    figures = check_outcome(site, jobs)
    assert leftovers(sessions) == []
    print(f"\nchaos SIGKILL: {STOPS} kills ({kills_while_holding} while holding jobs), {figures}")


@pytest.mark.slow
@pytest.mark.chaos
def test_group_sigterm_at_random_moments(site):
    drain_secs, timeout_stop, _ = unit_stop_settings()
    rng = random.Random(int(os.environ.get("CHAOS_SEED", time.time())))
    jobs = submit_mix(site)
    sessions: set[int] = set()
    drains: list[float] = []
    busy = 0  # stops that found jobs held
    for _ in range(STOPS):  # a stop of a running service (each once the engine is up), busy or idle by then
        proc = site.start("--engine-id", ENGINE, "--drain-secs", str(drain_secs), log_name="chaos.log", group=True,
                          append=True)
        sessions.add(proc.pid)
        try:
            wait_until(lambda: engine_up(site, proc), timeout=120, proc=proc)
            time.sleep(rng.uniform(0.5, 8.0))
            processes = group_of(proc)
            busy += bool(site.query("SELECT 1 FROM gpu_engine_proofjob WHERE status = 'running'"))
            stopped_at = time.monotonic()
            os.killpg(proc.pid, signal.SIGTERM)
            assert proc.wait(timeout_stop) == 0, site.log("chaos.log")
            drains.append(time.monotonic() - stopped_at)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        gone, alive = psutil.wait_procs(processes, timeout=15)
        assert not alive, f"left after a group SIGTERM: {[p.pid for p in alive]}"
    finish(site, sessions, "chaos.log")
    figures = check_outcome(site, jobs)
    assert leftovers(sessions) == []
    assert site.query("SELECT state, count(*) FROM gpu_engine_partitionrun WHERE state != 'done' GROUP BY state") == []
    assert figures["max_attempts"] == 1  # a drained job is finished or handed back uncounted, never retried
    assert log_troubles(site.log("chaos.log")) == []
    print(f"\nchaos group SIGTERM: {len(drains)} stops ({busy} while holding jobs), drain s min {min(drains):.2f} median "
          f"{statistics.median(drains):.2f} max {max(drains):.2f} (TimeoutStopSec {timeout_stop:.0f}), {figures}")
