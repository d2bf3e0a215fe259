"""The ssh transport: the status port is reached through a direct-tcpip channel of a real SSH server
on loopback; host keys pinned on first use (or checked against a known-hosts file), a changed host key,
a refused key and a closed status or gRPC port each give their reason."""
from __future__ import annotations

import asyncssh
import pytest

from gpu_engine import wire
from statuspanel.models import Source
from tests.fleet.conftest import wait_until
from tests.fleet.cuzk_server import CuzkServer
from tests.fleet.ssh_server import ForwardingSshServer, client_key
from tests.process_support import free_port

pytestmark = pytest.mark.django_db(transaction=True)


def _source(name: str) -> dict | None:
    snap = wire.default_cache().get(wire.snapshot_key(name))
    return snap["source"] if snap else None


def test_status_through_an_ssh_channel_with_the_host_key_pinned(collector, ssh_key, tmp_path) -> None:
    key_path, public = ssh_key
    with CuzkServer("race", freeze_step=1) as cuzk, ForwardingSshServer(tmp_path, public) as ssh:
        ssh.add_source("ssh-box", key_path, "--remote-port", str(cuzk.port))
        source = wait_until(lambda: (s := _source("ssh-box")) and s["state"] == "online" and s, 15, "online over ssh")
        assert source["transport"] == "ssh"
        assert source["target"] == f"ssh fleet@127.0.0.1:{ssh.port} -> 127.0.0.1:{cuzk.port}"
        assert ssh.channels >= 1 and cuzk.requests >= 1
        snap = wire.default_cache().get(wire.snapshot_key("ssh-box"))
        assert [c["problem"] for c in snap["consistency"]] == ["no-worker", "no-worker"]  # the race, over ssh
        wait_until(lambda: Source.objects.get(name="ssh-box").ssh_host_key == ssh.host_key_line, 5, "key pinned")


def test_a_changed_host_key_is_refused(collector, ssh_key, tmp_path) -> None:
    key_path, public = ssh_key
    with CuzkServer("fixture") as cuzk:
        with ForwardingSshServer(tmp_path, public) as first:
            first.add_source("ssh-box", key_path, "--remote-port", str(cuzk.port))
            wait_until(lambda: Source.objects.get(name="ssh-box").ssh_host_key, 15, "key pinned")
        with ForwardingSshServer(tmp_path, public) as impostor:  # another host key, where the box was
            Source.objects.filter(name="ssh-box").update(ssh_port=impostor.port)
            source = wait_until(lambda: (s := _source("ssh-box")) and s["reason"] == "ssh" and s, 15, "refused")
            assert source["state"] == "unreachable"
            assert "host key" in source["error"]
            assert impostor.channels == 0  # nothing went through the impostor


def test_strict_policy_with_a_known_hosts_file(collector, ssh_key, tmp_path) -> None:
    key_path, public = ssh_key
    with CuzkServer("fixture") as cuzk, ForwardingSshServer(tmp_path, public) as ssh:
        known = tmp_path / "known_hosts"
        known.write_text(f"[127.0.0.1]:{ssh.port} {ssh.host_key_line}\n")
        ssh.add_source("strict-box", key_path, "--remote-port", str(cuzk.port), "--known-hosts", "strict",
                       "--known-hosts-file", str(known))
        wait_until(lambda: (_source("strict-box") or {}).get("state") == "online", 15, "online, strict")
        known.write_text(f"[127.0.0.1]:{ssh.port} {asyncssh.generate_private_key('ssh-ed25519').export_public_key('openssh').decode()}")
        Source.objects.filter(name="strict-box").update(interval_secs=0.31)  # an edit: a fresh connection
        wait_until(lambda: (_source("strict-box") or {}).get("reason") == "ssh", 15, "unknown key refused")


@pytest.mark.parametrize("behind", ["--remote-port", "--grpc"])  # the HTTP status port, or cuzk's gRPC port
def test_a_refused_client_key_and_a_closed_port_behind_ssh(collector, ssh_key, tmp_path, behind) -> None:
    key_path, public = ssh_key
    stranger_path = tmp_path / "stranger"
    client_key(stranger_path)
    with ForwardingSshServer(tmp_path, public) as ssh:
        ssh.add_source("wrong-key", stranger_path, behind, str(free_port()))
        ssh.add_source("closed-port", key_path, behind, str(free_port()))
        wrong = wait_until(lambda: (s := _source("wrong-key")) and s["state"] == "unreachable" and s, 15, "wrong key")
        assert wrong["reason"] == "ssh" and "permission denied" in wrong["error"], wrong
        closed = wait_until(lambda: (s := _source("closed-port")) and s["state"] == "unreachable" and s, 15, "closed")
        assert closed["reason"] == "refused", closed


def test_an_unreadable_key_file_is_an_ssh_reason(collect, tmp_path) -> None:
    from statuspanel.fleet.transport import SourceConfig

    garbage = tmp_path / "not-a-key"
    garbage.write_text("this is no private key\n")
    collect([SourceConfig(id=1, name="bad-key", kind="cuzk", transport="ssh", ssh_user="fleet", ssh_host="127.0.0.1",
                          ssh_port=free_port(), ssh_key_path=str(garbage), remote_port=9820, interval_secs=0.3)])
    source = wait_until(lambda: (s := _source("bad-key")) and s["state"] == "unreachable" and s, 10, "unreachable")
    assert source["reason"] == "ssh" and "key file" in source["error"]
