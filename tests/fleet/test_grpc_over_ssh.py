"""A cuzk daemon's gRPC API through an SSH connection only: the gRPC port is reached by direct-tcpip
channels of a real SSH server (asyncssh, loopback), the same connection as the HTTP status when both
are polled. A refused key and a closed gRPC port behind ssh: tests/fleet/test_collector_ssh.py."""
from __future__ import annotations

import pytest

from gpu_engine import wire
from statuspanel.models import Source
from tests.fleet.conftest import wait_until
from tests.fleet.cuzk_grpc_server import GPU_NAME, CuzkGrpcServer
from tests.fleet.cuzk_server import CuzkServer
from tests.fleet.ssh_server import ForwardingSshServer

pytestmark = pytest.mark.django_db(transaction=True)


def _snap(name: str) -> dict | None:
    return wire.default_cache().get(wire.snapshot_key(name))


def test_grpc_only_through_ssh_with_the_host_key_pinned(collector, ssh_key, tmp_path) -> None:
    key_path, public = ssh_key
    with CuzkGrpcServer("script") as cuzk, ForwardingSshServer(tmp_path, public) as ssh:
        ssh.add_source("ssh-grpc", key_path, "--grpc", str(cuzk.port))  # a bare port: the remote loopback's
        snap = wait_until(lambda: (s := _snap("ssh-grpc")) and s["source"]["state"] == "online" and s, 15, "online")
        assert snap["gpus"][0]["name"] == GPU_NAME and snap["queues"] and snap["srs"]
        assert snap["source"]["target"] == f"ssh fleet@127.0.0.1:{ssh.port} -> grpc://127.0.0.1:{cuzk.port}"
        assert ssh.channels >= 1 and cuzk.calls >= 1
        wait_until(lambda: Source.objects.get(name="ssh-grpc").ssh_host_key == ssh.host_key_line, 5, "key pinned")
        polls = cuzk.calls
        wait_until(lambda: cuzk.calls >= polls + 4, 10, "polled on")
        assert ssh.channels <= 3  # the gRPC connection is kept across polls, not reopened for each


def test_http_and_grpc_share_one_ssh_connection_and_merge(collector, ssh_key, tmp_path) -> None:
    key_path, public = ssh_key
    with CuzkGrpcServer("script") as cuzk, CuzkServer("fixture") as http, \
            ForwardingSshServer(tmp_path, public) as ssh:
        ssh.add_source("ssh-merged", key_path, "--remote-port", str(http.port), "--grpc", f"127.0.0.1:{cuzk.port}")
        snap = wait_until(lambda: (s := _snap("ssh-merged")) and s["source"]["state"] == "online" and s, 15, "online")
        assert snap["pipelines"] and snap["gpus"][0]["name"] == GPU_NAME and snap["partitions_visible"] is True
        assert snap["source"]["target"] == f"ssh fleet@127.0.0.1:{ssh.port} -> 127.0.0.1:{http.port}"
        assert snap["source"]["grpc_target"] == f"ssh fleet@127.0.0.1:{ssh.port} -> grpc://127.0.0.1:{cuzk.port}"
        assert ssh.connections == 1
