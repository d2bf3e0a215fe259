"""The fleet over real interfaces: three "hosts" in network namespaces, each behind a veth pair, and
the dashboard (`watchfleet`) in the root namespace watching them all.

  gpu box   a cuzk-like server on its address (the scripted race sequence), plus misbehaving ones
  engine    `runprover` serving, read with its read-only status token
  ssh box   sshd on its address in front of a cuzk-like status port bound to that namespace's
            loopback (reachable only through the SSH channel); the keys made by the test

Pulling a link makes its source `unreachable` within two intervals, and `online` again once it is
back; servers answering HTML, truncated JSON, 50 MiB or nothing become `malformed` / unreachable by
timeout while the others keep updating and /healthz stays fast. Skips, saying why, where namespaces
or sshd cannot be had.
"""
from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fleet import netns, sshd
from tests.fleet.dashboard import ROOT, Dashboard, start_engine, wait_engine

pytestmark = [pytest.mark.slow, pytest.mark.netns]

INTERVAL = 1.0
TOKEN = "fleet-netns-operator-token"
STATUS_TOKEN = "fleet-netns-status-token-01"
CUZK_PORT, ENGINE_PORT, SSH_PORT, LOOPBACK_STATUS_PORT = 9820, 8000, 2222, 9821
BAD_MODES = {"bad-html": ("html", 9831), "bad-truncated": ("truncated", 9832), "bad-huge": ("huge", 9833),
             "bad-hang": ("hang", 9834)}
SERVER = str(ROOT / "tests" / "fleet" / "cuzk_server.py")


@dataclass
class Fleet:
    dash: Dashboard
    gpu: netns.Host
    engine: netns.Host
    ssh: netns.Host


def _cuzk_server(host: netns.Host, bind: str, port: int, mode: str, *extra: str) -> subprocess.Popen:
    return host.serve([sys.executable, SERVER, "--host", bind, "--port", str(port), "--mode", mode, *extra])


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, netns_lab) -> Iterator[Fleet]:
    tmp = tmp_path_factory.mktemp("fleet-netns")
    with Dashboard(tmp / "dash", TOKEN) as dash:
        gpu, engine, ssh = netns_lab.host("gpu"), netns_lab.host("eng"), netns_lab.host("ssh")
        try:
            _cuzk_server(gpu, gpu.addr, CUZK_PORT, "race", "--step-secs", "1.5")
            proc, log = start_engine(tmp / "engine", bind=f"{engine.addr}:{ENGINE_PORT}", status_token=STATUS_TOKEN,
                                     engine_id="netns-engine", popen=engine.popen)
            _cuzk_server(ssh, "127.0.0.1", LOOPBACK_STATUS_PORT, "fixture")
            server = sshd.SshServer(tmp / "ssh", listen=ssh.addr, port=SSH_PORT, forward_port=LOOPBACK_STATUS_PORT)
            server.start(ssh.popen)
            wait_engine(f"http://{engine.addr}:{ENGINE_PORT}", proc)

            every = ("--interval", str(INTERVAL))
            dash.add_source("box-http", "--kind", "cuzk", "--url", f"http://{gpu.addr}:{CUZK_PORT}", *every)
            dash.add_source("box-engine", "--kind", "vastmanager", "--url", f"http://{engine.addr}:{ENGINE_PORT}",
                            "--token", STATUS_TOKEN, *every)
            dash.add_source("box-engine-badtoken", "--kind", "vastmanager", "--url",
                            f"http://{engine.addr}:{ENGINE_PORT}", "--token", "not-the-status-token-xx", *every)
            dash.add_source("box-ssh", "--kind", "cuzk", "--ssh", f"root@{ssh.addr}:{SSH_PORT}",
                            "--key", str(server.client_key), "--remote-port", str(LOOPBACK_STATUS_PORT),
                            "--known-hosts", "strict", "--known-hosts-file", str(server.known_hosts), *every)
            dash.start()
            yield Fleet(dash, gpu, engine, ssh)
        except Exception:  # the dashboard prints its own log's tail
            for log_file in (tmp / "engine" / "runprover.log", tmp / "ssh" / "sshd.log"):
                if log_file.exists():
                    print(log_file.read_text()[-2000:])
            raise


def _seq(fleet: Fleet, name: str) -> int:
    return fleet.dash.fleet()[name]["seq"]


def test_three_hosts_online_over_their_own_interfaces(fleet):
    for name in ("box-http", "box-engine", "box-ssh"):
        snap = fleet.dash.wait_state(name, "online", timeout=30)
        assert snap["source"]["poll_ms"] is not None and snap["source"]["error"] is None
    assert fleet.dash.fleet()["box-http"]["source"]["transport"] == "http"
    assert fleet.dash.fleet()["box-ssh"]["source"]["transport"] == "ssh"
    # Our engine's snapshot, read with the status token, is the engine's own.
    engine = fleet.dash.fleet()["box-engine"]
    assert engine["source"]["kind"] == "vastmanager" and engine["backend"] == "cpu"
    # The SSH box's status port is on its loopback: only the SSH channel reaches it.
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://{fleet.ssh.addr}:{LOOPBACK_STATUS_PORT}/status", timeout=2)
    assert fleet.dash.fleet()["box-ssh"]["pipelines"][0]["job_id"] == "ps-snap-1000-42-7"


def test_wrong_status_token_is_unreachable_with_the_reason(fleet):
    snap = fleet.dash.wait_state("box-engine-badtoken", "unreachable", timeout=30)
    assert "401" in snap["source"]["error"] or "unauthorized" in snap["source"]["error"].lower()


def test_race_sequence_is_flagged_while_it_lasts(fleet):
    snap = fleet.dash.wait_for("box-http", lambda s: any(c["problem"] == "no-worker" for c in s.get("consistency", [])),
                               timeout=30, what="the race flagged")
    flagged = {(c["job_id"], c["partition"]) for c in snap["consistency"]}
    assert flagged == {("ps-snap-1000-42-7", 5), ("ps-snap-1000-42-7", 6)}
    fleet.dash.wait_for("box-http", lambda s: s.get("consistency") == [] and s["source"]["state"] == "online",
                        timeout=30, what="consistent again")


@pytest.mark.parametrize("name,host", [("box-http", "gpu"), ("box-ssh", "ssh")])
def test_link_down_is_unreachable_within_two_intervals_and_online_when_back(fleet, name, host):
    netns.check_link_pull(fleet.dash, getattr(fleet, host), name, INTERVAL, others=["box-engine"])


def _healthz_ms(base: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(f"{base}/healthz", timeout=5) as response:
        assert response.status == 200
    return (time.perf_counter() - started) * 1000.0


def test_misbehaving_servers_fail_alone(fleet):
    for name, (mode, port) in BAD_MODES.items():
        _cuzk_server(fleet.gpu, fleet.gpu.addr, port, mode)
        fleet.dash.add_source(name, "--kind", "cuzk", "--url", f"http://{fleet.gpu.addr}:{port}",
                              "--interval", str(INTERVAL))
    expected = {"bad-html": ("malformed", "not-json"), "bad-truncated": ("malformed", "not-json"),
                "bad-huge": ("malformed", "too-large"), "bad-hang": ("unreachable", "timeout")}
    before = {name: _seq(fleet, name) for name in ("box-http", "box-engine", "box-ssh")}
    healthz_ms: list[float] = []
    reached = fleet.dash.wait_states(expected, timeout=40, each=lambda: healthz_ms.append(_healthz_ms(fleet.dash.base)))
    assert all(source["error"] for source in reached.values()), reached  # said in words too
    # The good sources kept updating all along, and the web server kept answering at once.
    fleet.dash.assert_polled_on(before)
    slowest = max(healthz_ms)
    assert slowest < 1000.0, f"/healthz took {slowest:.0f} ms while sources misbehaved"


def test_namespaces_are_removed_afterwards():
    """The lab leaves nothing behind (checked on a lab of its own, made and closed here)."""
    reason = netns.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with netns.NetnsLab() as lab:
        name = lab.host("tmp").name
        assert name in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert name not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not Path(f"/run/netns/{name}").exists()
