"""cuzk's gRPC API over real interfaces: "hosts" in network namespaces, the dashboard (`watchfleet`,
a process of its own) in the root namespace, sources added with `addsource --grpc`.

  gpu box   a scripted cuzk gRPC daemon on its address (two workers on one named GPU, changing
            queues, one SRS entry), its HTTP status beside it, and gRPC servers that hang, reset,
            answer UNIMPLEMENTED or a 9 MiB message
  ssh box   sshd on its address in front of a gRPC daemon bound to that namespace's loopback
            (reachable only through the SSH channel)

The API and the rendered panel (the WebSocket's html frames) show names, VRAM and queues; the
merged HTTP+gRPC source is one engine; each misbehaving server gets its state and reason while the
others keep updating; a pulled link is `unreachable` within two intervals and `online` when back.
Where namespaces cannot be made, tests/fleet/test_grpc_source_loopback.py covers the same on loopback.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.fleet import netns, sshd
from tests.fleet.cuzk_grpc_server import GPU_NAME, VRAM_TOTAL
from tests.fleet.dashboard import ROOT, Dashboard

pytestmark = [pytest.mark.slow]

INTERVAL = 1.0
TOKEN = "fleet-grpc-netns-operator-token"
GRPC_PORT, HTTP_PORT, SSH_PORT = 9820, 9821, 2222
BAD = {"grpc-hang": ("hang", 9841, "unreachable", "timeout"), "grpc-reset": ("reset", 9842, "unreachable", "network"),
       "grpc-unimpl": ("unimplemented", 9843, "unreachable", "grpc"),
       "grpc-huge": ("huge", 9844, "malformed", "too-large")}
GRPC_SERVER = str(ROOT / "tests" / "fleet" / "cuzk_grpc_server.py")
HTTP_SERVER = str(ROOT / "tests" / "fleet" / "cuzk_server.py")
GOOD = ("box-grpc", "box-merged", "box-ssh-grpc")


@dataclass
class Fleet:
    dash: Dashboard
    gpu: netns.Host
    ssh: netns.Host


def _serve(host: netns.Host, script: str, *args: str) -> subprocess.Popen:
    return host.serve([sys.executable, script, *args])


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, netns_lab) -> Iterator[Fleet]:
    tmp = tmp_path_factory.mktemp("grpc-netns")
    with Dashboard(tmp / "dash", TOKEN) as dash:
        gpu, ssh = netns_lab.host("ggpu"), netns_lab.host("gssh")
        _serve(gpu, GRPC_SERVER, "--host", gpu.addr, "--port", str(GRPC_PORT), "--step-secs", "1.0")
        _serve(gpu, HTTP_SERVER, "--host", gpu.addr, "--port", str(HTTP_PORT), "--mode", "fixture")
        for mode, port, _, _ in BAD.values():
            _serve(gpu, GRPC_SERVER, "--host", gpu.addr, "--port", str(port), "--mode", mode)
        _serve(ssh, GRPC_SERVER, "--host", "127.0.0.1", "--port", str(GRPC_PORT))
        server = sshd.SshServer(tmp / "ssh", listen=ssh.addr, port=SSH_PORT, forward_port=GRPC_PORT)
        server.start(ssh.popen)

        every = ("--interval", str(INTERVAL))
        sources = [
            ["box-grpc", "--kind", "cuzk", "--grpc", f"{gpu.addr}:{GRPC_PORT}", *every],
            ["box-merged", "--kind", "cuzk", "--url", f"http://{gpu.addr}:{HTTP_PORT}", "--grpc",
             f"{gpu.addr}:{GRPC_PORT}", *every],
            ["box-ssh-grpc", "--kind", "cuzk", "--ssh", f"root@{ssh.addr}:{SSH_PORT}", "--key",
             str(server.client_key), "--grpc", str(GRPC_PORT), "--known-hosts", "strict",
             "--known-hosts-file", str(server.known_hosts), *every],
        ]
        sources += [[name, "--kind", "cuzk", "--grpc", f"{gpu.addr}:{port}", *every]
                    for name, (_, port, _, _) in BAD.items()]
        dash.add_sources(sources)
        dash.start()
        yield Fleet(dash, gpu, ssh)


def test_names_vram_and_queues_over_real_interfaces(fleet) -> None:
    for name in GOOD:
        snap = fleet.dash.wait_state(name, "online", timeout=30)
        gpus = snap["gpus"]
        assert [(g["name"], g["mem_total_bytes"], g["workers"]) for g in gpus] == [(GPU_NAME, VRAM_TOTAL, 2)], name
        assert {q["proof_kind"] for q in snap["queues"]} == {"porep-c2", "snap-update"}, name
        assert snap["srs"][0]["tier"] == "hot", name
    # Queues change as the daemon's do (it moves on every second).
    seen = set()
    deadline = time.monotonic() + 15
    while len(seen) < 3 and time.monotonic() < deadline:
        snap = fleet.dash.fleet()["box-grpc"]
        seen.add(tuple((q["pending"], q["in_progress"]) for q in snap["queues"]))
        time.sleep(0.3)
    assert len(seen) >= 3, seen


def test_the_merged_source_is_one_engine_and_grpc_only_says_what_it_lacks(fleet) -> None:
    engines = fleet.dash.wait_state("box-merged", "online", timeout=30) and fleet.dash.fleet()
    merged, alone = engines["box-merged"], engines["box-grpc"]
    assert merged["pipelines"] and merged["partitions_visible"] is True and merged["gpus"][0]["name"] == GPU_NAME
    assert alone["pipelines"] == [] and alone["partitions_visible"] is False
    assert sorted(engines) == sorted([*GOOD, *BAD])  # one engine per source, the merged one included


def test_the_panel_renders_gpus_vram_and_queues(fleet) -> None:
    from websockets.sync.client import connect

    for name in GOOD:
        fleet.dash.wait_state(name, "online", timeout=30)
    html: dict[str, str] = {}
    with connect(f"ws://127.0.0.1:{fleet.dash.port}/ws/status/?token={TOKEN}",
                 origin=f"http://127.0.0.1:{fleet.dash.port}", open_timeout=10) as ws:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not all(n in html for n in GOOD):
            frame = json.loads(ws.recv(timeout=5))
            if frame.get("type") == "snapshot" and frame["snapshot"]["source"]["state"] == "online":
                html[frame["engine_id"]] = frame["html"]
    for name in GOOD:
        page = html[name]
        assert f'data-gpu-name="{GPU_NAME}"' in page and f'data-vram-total="{VRAM_TOTAL}"' in page, name
        assert 'data-queue="porep-c2"' in page and 'data-tier="hot"' in page, name
    assert "status_listen" in html["box-grpc"] and "status_listen" not in html["box-merged"]


def test_misbehaving_grpc_servers_fail_alone(fleet) -> None:
    before = {name: fleet.dash.wait_state(name, "online", timeout=30)["seq"] for name in GOOD}
    expected = {name: (state, reason) for name, (_, _, state, reason) in BAD.items()}
    reached = fleet.dash.wait_states(expected, timeout=40, at_least=3 * INTERVAL)  # the good ones poll on meanwhile
    for source in reached.values():
        assert source["error"].startswith("gRPC GetStatus: "), source
    fleet.dash.assert_polled_on(before)


@pytest.mark.parametrize("name,host", [("box-grpc", "gpu"), ("box-ssh-grpc", "ssh")])
def test_link_down_is_unreachable_within_two_intervals_and_online_when_back(fleet, name, host) -> None:
    netns.check_link_pull(fleet.dash, getattr(fleet, host), name, INTERVAL)
