"""A cuzk daemon's gRPC API through an SSH connection only: the gRPC port is reached by direct-tcpip
channels of a real SSH server (asyncssh, loopback), the same connection as the HTTP status when both
are polled; a refused key and a closed gRPC port behind ssh each give their reason."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from gpu_engine import wire
from statuspanel.fleet.collector import FleetCollector
from statuspanel.models import Source
from tests.fleet.conftest import wait_until
from tests.fleet.cuzk_grpc_server import GPU_NAME, CuzkGrpcServer
from tests.fleet.cuzk_server import CuzkServer
from tests.fleet.ssh_server import ForwardingSshServer, client_key
from tests.process_support import free_port

pytestmark = pytest.mark.django_db(transaction=True)


def _snap(name: str) -> dict | None:
    return wire.default_cache().get(wire.snapshot_key(name))


@pytest.fixture
def collector(clean_panel_cache):
    c = FleetCollector(reload_secs=0.2).start()
    yield c
    c.stop()


@pytest.fixture
def key(tmp_path):
    path = tmp_path / "id_ed25519"
    return path, client_key(path)


def _add(name: str, ssh_port: int, key_path, *extra: str) -> None:
    call_command("addsource", name, "--kind", "cuzk", "--ssh", f"fleet@127.0.0.1:{ssh_port}", "--key", str(key_path),
                 "--interval", "0.3", *extra)


def test_grpc_only_through_ssh_with_the_host_key_pinned(collector, key, tmp_path) -> None:
    key_path, public = key
    with CuzkGrpcServer("script") as cuzk, ForwardingSshServer(tmp_path, public) as ssh:
        _add("ssh-grpc", ssh.port, key_path, "--grpc", str(cuzk.port))  # a bare port: the remote loopback's
        snap = wait_until(lambda: (s := _snap("ssh-grpc")) and s["source"]["state"] == "online" and s, 15, "online")
        assert snap["gpus"][0]["name"] == GPU_NAME and snap["queues"] and snap["srs"]
        assert snap["source"]["target"] == f"ssh fleet@127.0.0.1:{ssh.port} -> grpc://127.0.0.1:{cuzk.port}"
        assert ssh.channels >= 1 and cuzk.calls >= 1
        wait_until(lambda: Source.objects.get(name="ssh-grpc").ssh_host_key == ssh.host_key_line, 5, "key pinned")
        polls = cuzk.calls
        wait_until(lambda: cuzk.calls >= polls + 4, 10, "polled on")
        assert ssh.channels <= 3  # the gRPC connection is kept across polls, not reopened for each


def test_http_and_grpc_share_one_ssh_connection_and_merge(collector, key, tmp_path) -> None:
    key_path, public = key
    with CuzkGrpcServer("script") as cuzk, CuzkServer("fixture") as http, \
            ForwardingSshServer(tmp_path, public) as ssh:
        _add("ssh-merged", ssh.port, key_path, "--remote-port", str(http.port), "--grpc", f"127.0.0.1:{cuzk.port}")
        snap = wait_until(lambda: (s := _snap("ssh-merged")) and s["source"]["state"] == "online" and s, 15, "online")
        assert snap["pipelines"] and snap["gpus"][0]["name"] == GPU_NAME and snap["partitions_visible"] is True
        assert snap["source"]["target"] == f"ssh fleet@127.0.0.1:{ssh.port} -> 127.0.0.1:{http.port}"
        assert snap["source"]["grpc_target"] == f"ssh fleet@127.0.0.1:{ssh.port} -> grpc://127.0.0.1:{cuzk.port}"
        assert ssh.connections == 1


def test_a_refused_key_and_a_closed_grpc_port_behind_ssh(collector, key, tmp_path) -> None:
    key_path, public = key
    stranger = tmp_path / "stranger"
    client_key(stranger)
    with ForwardingSshServer(tmp_path, public) as ssh:
        _add("grpc-wrong-key", ssh.port, stranger, "--grpc", str(free_port()))
        _add("grpc-closed", ssh.port, key_path, "--grpc", str(free_port()))
        wrong = wait_until(lambda: (s := _snap("grpc-wrong-key")) and s["source"]["state"] == "unreachable" and s,
                           15, "wrong key")["source"]
        assert wrong["reason"] == "ssh" and "permission denied" in wrong["error"], wrong
        closed = wait_until(lambda: (s := _snap("grpc-closed")) and s["source"]["state"] == "unreachable" and s,
                            15, "closed")["source"]
        assert closed["reason"] == "refused", closed
