"""Scale-out mode end to end, every part a real process: PostgreSQL holds the queue, Redis carries
the channel layer and the snapshot cache, two `runprover --no-serve` GPU hosts claim and prove, and a
Daphne dashboard takes the jobs over HTTP and streams both hosts' snapshots over one WebSocket.
When a host stops, its heartbeat lapses and the dashboard stops listing it as live."""
from __future__ import annotations

import secrets
from collections import Counter
from typing import Any

import pytest

from gpu_engine.groth16.api import load_params, make_bundle, parse_vk, verify_bundle
from gpu_engine.kinds import PROOF_KINDS
from tests.scaleout.cluster import Cluster, FrameStream, connect_snapshots, private_database, wait_until
from tests.services import private_redis_prefix, redis_keys

pytestmark = pytest.mark.slow

ENGINES = ("host-a", "host-b")
# Every kind; enough single-partition jobs that both hosts get work while the big ones are proving.
PLAN = {"porep-c2": 1, "snap-update": 1, "window-post": 4, "winning-post": 4}
SETTINGS = {"JOB_LEASE_SECS": "5", "HEARTBEAT_SECS": "0.5", "TRACKER_GRACE_SECS": "120"}
START_SECS = 300   # first start in a session generates the parameters
PROVE_SECS = 600   # a loaded 2-core machine proving 34 partitions in 2 engines plus a dashboard


def _proving_full_ids(frames: list[dict[str, Any]], job_ids: set[str]) -> set[tuple[str, str]]:
    """(engine, job id) for every worker shown `proving` a job whose id is whole (one we submitted)."""
    return {(f["engine_id"], w["current_job"]) for f in frames for w in f["snapshot"].get("gpu_workers", [])
            if w.get("state") == "proving" and w.get("current_job") in job_ids}


def _latest(frames: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    latest: dict[str, dict[str, Any]] = {}
    for frame in frames:
        latest[frame["engine_id"]] = frame["snapshot"]
    return latest


def _check_job(cluster: Cluster, job_id: str, kind: str, vks: dict[str, dict]) -> str:
    """The job is done, proved by one engine in one attempt, and its bundle verifies; returns the engine."""
    status, job = cluster.api("GET", f"/api/jobs/{job_id}")
    assert status == 200, job
    assert job["status"] == "done" and job["verified"] and job["proof_kind"] == kind, job
    assert job["attempts"] == 1, f"{job_id} was claimed {job['attempts']} times"
    owner = job["claimed_by"]
    assert owner in ENGINES, job
    done_runs = [r for r in job["partition_runs"] if r["state"] == "done"]
    assert sorted(r["index"] for r in done_runs) == list(range(PROOF_KINDS[kind].partitions)), job["partition_runs"]
    assert {r["engine_id"] for r in job["partition_runs"]} == {owner}, job["partition_runs"]
    status, bundle = cluster.api("GET", f"/api/jobs/{job_id}/proof")
    assert status == 200, bundle
    assert bundle["job_id"] == job_id and bundle["proof_kind"] == kind
    assert bundle["vk"] == vks[kind], f"{job_id}: the bundle's verifying key is not the {kind} key"
    results = verify_bundle(bundle, parse_vk(vks[kind]))
    assert results == [(i, True) for i in range(PROOF_KINDS[kind].partitions)], results
    return owner


def _scenario(cluster: Cluster, params_dir) -> None:
    cluster.migrate()
    cluster.start_dashboard()
    origin = cluster.base_url
    with FrameStream(cluster.ws_url, origin) as stream:
        for engine_id in ENGINES:
            cluster.start_engine(engine_id)
        wait_until(lambda: {f["engine_id"] for f in stream.snapshots()} >= set(ENGINES), START_SECS,
                   "a snapshot from both engines over the dashboard's WebSocket", check=cluster.check_alive)

        run = secrets.token_hex(4)
        jobs = {f"scaleout-{kind}-{run}-{i}": kind for kind, n in PLAN.items() for i in range(n)}
        for job_id, kind in jobs.items():
            status, body = cluster.api("POST", "/api/jobs", {"proof_kind": kind, "job_id": job_id})
            assert status == 201 and body["status"] == "queued", body

        def all_done() -> bool:
            status, page = cluster.api("GET", "/api/jobs?page_size=500")
            assert status == 200, page
            states = {j["job_id"]: j["status"] for j in page["jobs"]}
            bad = {j: s for j, s in states.items() if s not in ("queued", "running", "done")}
            assert not bad, f"jobs ended badly: {bad}"
            return set(states) == set(jobs) and set(states.values()) == {"done"}

        wait_until(all_done, PROVE_SECS, "every job to be done", check=cluster.check_alive, interval=0.5)

        vks = {kind: make_bundle(kind, "vk", load_params(kind, params_dir).vk, [])["vk"] for kind in PLAN}
        owners = {job_id: _check_job(cluster, job_id, kind, vks) for job_id, kind in jobs.items()}
        per_engine = Counter(owners.values())
        assert set(per_engine) == set(ENGINES), f"one engine proved nothing: {per_engine}"

        # The live view agrees with the database: each engine's counters reach what it proved.
        def counters_match() -> bool:
            latest = _latest(stream.snapshots())
            return all(latest[e]["counters"]["total_completed"] == per_engine[e] for e in ENGINES)

        wait_until(counters_match, 60, f"each engine's completed counter to reach {dict(per_engine)}")
        frames = stream.snapshots()
        for frame in frames:
            assert frame["snapshot"]["engine_id"] == frame["engine_id"] and frame["snapshot"]["seq"] == frame["seq"]
        for engine_id in ENGINES:
            seqs = [f["seq"] for f in frames if f["engine_id"] == engine_id]
            assert seqs == sorted(set(seqs)), f"{engine_id}: frames out of order or repeated"
        proving = _proving_full_ids(frames, set(jobs))
        assert proving, "no snapshot showed a worker proving one of the jobs under its full id"

    # One host stops the way an operator stops it; the dashboard drops it once its heartbeat lapses.
    assert cluster.terminate("host-b") == 0, "host-b did not exit cleanly on SIGTERM"

    def host_b_gone() -> bool:
        ids = {f["engine_id"] for f in connect_snapshots(cluster.ws_url, origin)}
        return "host-a" in ids and "host-b" not in ids

    wait_until(host_b_gone, 60, "a fresh WebSocket client to get host-a's snapshot and not host-b's",
               check=cluster.check_alive, interval=0.3)
    page = cluster.panel_html()
    assert 'data-engine-id="host-a"' in page and 'data-engine-id="host-b"' not in page
    assert 'data-offline-engine-id="host-b"' in page, "the panel does not report host-b as offline"


def test_two_hosts_and_a_dashboard_over_postgres_and_redis(services, tmp_path, params_dir):
    with private_database() as database_url, private_redis_prefix() as prefix:
        cluster = Cluster(tmp_path, database_url, prefix, params_dir, secrets.token_urlsafe(24), **SETTINGS)
        try:
            _scenario(cluster, params_dir)
            assert redis_keys(prefix), "nothing was stored under the run's Redis prefix"
        except BaseException:
            print(cluster.logs())
            raise
        finally:
            cluster.stop_all()
    assert not redis_keys(prefix), "keys left under the run's Redis prefix"
