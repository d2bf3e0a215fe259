"""The collector against real grpcio servers on loopback (built from the project's .proto): a scripted
cuzk daemon shows its GPU by name with VRAM and jobs, its queues as they change and its SRS tier;
one beside an HTTP status is one merged engine; servers that hang, reset, answer UNIMPLEMENTED, a
9 MiB message or bytes that are no message each get their state and reason while the others update."""
from __future__ import annotations

import time

import pytest

from gpu_engine import wire
from statuspanel.fleet.transport import SourceConfig
from tests.fleet.conftest import wait_until
from tests.fleet.cuzk_grpc_server import BIG_WORKERS, GPU_NAME, SCRIPT, SRS_CIRCUIT, VRAM_TOTAL, CuzkGrpcServer
from tests.fleet.cuzk_server import CuzkServer
from tests.process_support import free_port

INTERVAL = 0.3
EXPECTED = {
    "hang": ("unreachable", "timeout"),
    "reset": ("unreachable", "network"),
    "unimplemented": ("unreachable", "grpc"),
    "huge": ("malformed", "too-large"),
    "garbage": ("malformed", "not-protobuf"),
}


def _cfg(i: int, name: str, grpc_target: str, **extra) -> SourceConfig:
    return SourceConfig(id=i, name=name, kind="cuzk", transport="http", grpc_target=grpc_target,
                        interval_secs=INTERVAL, **extra)


def _snap(name: str) -> dict | None:
    return wire.default_cache().get(wire.snapshot_key(name))


def _online(name: str) -> dict | None:
    snap = _snap(name)
    return snap if snap and snap["source"]["state"] == "online" else None


@pytest.fixture
def scripted():
    with CuzkGrpcServer("script", step_secs=0.5) as server:
        yield server


def test_a_grpc_only_daemon_shows_its_gpu_queues_and_srs(collect, scripted) -> None:
    collect([_cfg(1, "grpc-box", scripted.target)])
    snap = wait_until(lambda: _online("grpc-box"), 10, "the gRPC source online")
    # Two worker entries on ordinal 0 are one device, named as the card reports itself.
    assert [(g["ordinal"], g["name"], g["mem_total_bytes"], g["workers"]) for g in snap["gpus"]] == \
        [(0, GPU_NAME, VRAM_TOTAL, 2)]
    assert len(snap["gpu_workers"]) == 2 and {w["gpu_ordinal"] for w in snap["gpu_workers"]} == {0}
    assert snap["srs"] == [{"circuit_id": SRS_CIRCUIT, "tier": "hot", "size_bytes": None, "ref_count": 0}]
    assert {q["proof_kind"] for q in snap["queues"]} == {"porep-c2", "snap-update"}
    assert snap["partitions_visible"] is False and snap["pipelines"] == []
    assert snap["source"]["grpc_target"] == f"grpc://{scripted.target}" and snap["source"]["status_http"] is False
    assert snap["source"]["target"] == f"grpc://{scripted.target}"
    # Every scripted step is seen: its queues, its jobs and the VRAM in use then.
    steps_seen = set()

    def seen_every_step():
        s = _online("grpc-box")
        if s:
            queues = {q["proof_kind"]: (q["pending"], q["in_progress"]) for q in s["queues"]}
            for i, (jobs, want_queues, free) in enumerate(SCRIPT):
                running = [j["job_id"] for j in s["gpus"][0]["jobs"]]
                if queues == want_queues and running == [j[0] for j in jobs if j] and \
                        s["gpus"][0]["mem_used_bytes"] == VRAM_TOTAL - free:
                    steps_seen.add(i)
        return steps_seen == set(range(len(SCRIPT)))

    wait_until(seen_every_step, 15, "every scripted step")
    # GetMetrics' per-kind counters fill what GetStatus does not say; the totals advance.
    later = wait_until(lambda: (s := _online("grpc-box")) and s["counters"]["completed_by_kind"] and s, 5, "by kind")
    by_kind = later["counters"]["completed_by_kind"]
    assert set(by_kind) == {"porep-c2", "snap-update"}
    assert sum(by_kind.values()) == later["counters"]["total_completed"] > 0


def test_grpc_beside_http_is_one_merged_engine(collect, scripted) -> None:
    with CuzkServer("fixture") as http:
        collect([_cfg(1, "merged-box", scripted.target, url=http.url)])
        snap = wait_until(lambda: _online("merged-box"), 10, "the merged source online")
    # Pipelines, partitions and workers from HTTP; GPUs, queues and SRS from gRPC; one engine.
    assert snap["pipelines"] and snap["pipelines"][0]["partitions"]
    assert [w["worker_id"] for w in snap["gpu_workers"]] == [0, 1]
    assert snap["allocations"]["srs"]  # the HTTP status's own allocations stay
    assert snap["gpus"][0]["name"] == GPU_NAME and snap["queues"] and snap["srs"][0]["tier"] == "hot"
    assert snap["partitions_visible"] is True and snap["source"]["status_http"] is True
    assert snap["source"]["target"].startswith(http.url) and snap["source"]["grpc_target"].startswith("grpc://")
    assert list(wire.known_engines(wire.default_cache())) == ["merged-box"]


def test_a_merged_engine_whose_grpc_half_fails_says_which_half(collect) -> None:
    with CuzkServer("fixture") as http:
        collect([_cfg(1, "half-box", f"127.0.0.1:{free_port()}", url=http.url)])
        snap = wait_until(lambda: (s := _snap("half-box")) and s["source"]["state"] == "unreachable" and s, 10,
                          "unreachable")
    assert snap["source"]["reason"] == "refused"
    assert snap["source"]["error"].startswith("gRPC GetStatus: refused")


@pytest.fixture
def bad_servers():
    started = {mode: CuzkGrpcServer(mode).start() for mode in EXPECTED}
    yield started
    for server in started.values():
        server.stop()


def test_each_bad_grpc_server_gets_its_state_and_reason_while_the_good_one_updates(collect, scripted,
                                                                                   bad_servers) -> None:
    configs = [_cfg(i, f"bad-{mode}", server.target) for i, (mode, server) in enumerate(bad_servers.items())]
    configs += [_cfg(50, "good", scripted.target), _cfg(51, "bad-refused", f"127.0.0.1:{free_port()}"),
                _cfg(52, "bad-dns", "no-such-host.invalid:9820")]
    collect(configs)
    wait_until(lambda: _online("good"), 10, "the good source online")
    expected = dict(EXPECTED, refused=("unreachable", "refused"), dns=("unreachable", "dns"))
    uptimes, online_throughout = [], True
    deadline = time.monotonic() + 6.0  # the hanging one's deadline is 2 s (connect + read timeouts)
    while time.monotonic() < deadline:
        snap = _snap("good")
        online_throughout &= snap["source"]["state"] == "online"
        uptimes.append(snap["uptime_secs"])
        time.sleep(0.25)
    for mode, (state, reason) in expected.items():
        source = _snap(f"bad-{mode}")["source"]
        assert (source["state"], source["reason"]) == (state, reason), (mode, source)
        assert source["error"].startswith("gRPC GetStatus: "), source["error"]
    assert "UNIMPLEMENTED" in _snap("bad-unimplemented")["source"]["error"]
    assert "byte cap" in _snap("bad-huge")["source"]["error"]
    assert online_throughout and len(set(uptimes)) >= 3  # the scripted daemon's clock moved all along


def test_a_server_back_after_failing_is_online_again_without_waiting_for_grpcio(collect) -> None:
    port = free_port()
    collect([_cfg(1, "flappy", f"127.0.0.1:{port}")])
    wait_until(lambda: (s := _snap("flappy")) and s["source"]["state"] == "unreachable", 10, "unreachable")
    with CuzkGrpcServer("script", port=port):
        started = time.monotonic()
        wait_until(lambda: _online("flappy"), 10, "online once the daemon is up")
        # The collector's backoff (at most 8 intervals) rules, not grpcio's reconnect backoff (up to 2 min).
        assert time.monotonic() - started < 8 * INTERVAL + 2.0


def test_an_answer_with_too_many_entries_is_refused_without_holding_the_others(collect, scripted) -> None:
    """20,000 worker entries (1.3 MiB, under the byte cap) would take over a second to adapt: the list is
    counted first and the answer refused as too large, polled again and again while the good one updates."""
    with CuzkGrpcServer("big") as big:
        collect([_cfg(1, "big-box", big.target), _cfg(2, "good", scripted.target)])
        wait_until(lambda: _online("good"), 10, "the good source online")
        online_throughout, changes, last_seq = True, [], None
        deadline = time.monotonic() + 6.0
        while time.monotonic() < deadline:
            snap = _snap("good")
            online_throughout &= snap["source"]["state"] == "online"
            if snap["seq"] != last_seq:
                changes.append(time.monotonic())
                last_seq = snap["seq"]
            time.sleep(0.05)
        source = _snap("big-box")["source"]
        assert big.calls >= 3
    assert (source["state"], source["reason"]) == ("malformed", "too-large")
    assert f"gpus lists {BIG_WORKERS} entries" in source["error"]
    gaps = [b - a for a, b in zip(changes, changes[1:])]
    assert online_throughout and max(gaps) < 1.0, gaps  # polled every 0.3 s, never held for long
