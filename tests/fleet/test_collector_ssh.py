"""The ssh transport: the status port is reached through a direct-tcpip channel of a real SSH server
on loopback; host keys pinned on first use (or checked against a known-hosts file), a changed host key,
a refused key and a closed status port each give their reason."""
from __future__ import annotations

import asyncssh
import pytest
from django.core.management import call_command

from gpu_engine import wire
from statuspanel.fleet.collector import FleetCollector
from statuspanel.models import Source
from tests.fleet.conftest import wait_until
from tests.fleet.cuzk_server import CuzkServer
from tests.fleet.ssh_server import ForwardingSshServer, client_key
from tests.process_support import free_port

pytestmark = pytest.mark.django_db(transaction=True)


def _source(name: str) -> dict | None:
    snap = wire.default_cache().get(wire.snapshot_key(name))
    return snap["source"] if snap else None


@pytest.fixture
def collector(clean_panel_cache):
    c = FleetCollector(reload_secs=0.2).start()
    yield c
    c.stop()


@pytest.fixture
def key(tmp_path):
    path = tmp_path / "id_ed25519"
    return path, client_key(path)


def _add(name: str, ssh_port: int, key_path, remote_port: int, *extra: str) -> None:
    call_command("addsource", name, "--kind", "cuzk", "--ssh", f"fleet@127.0.0.1:{ssh_port}", "--key", str(key_path),
                 "--remote-port", str(remote_port), "--interval", "0.3", *extra)


def test_status_through_an_ssh_channel_with_the_host_key_pinned(collector, key, tmp_path) -> None:
    key_path, public = key
    with CuzkServer("race", freeze_step=1) as cuzk, ForwardingSshServer(tmp_path, public) as ssh:
        _add("ssh-box", ssh.port, key_path, cuzk.port)
        source = wait_until(lambda: (s := _source("ssh-box")) and s["state"] == "online" and s, 15, "online over ssh")
        assert source["transport"] == "ssh"
        assert source["target"] == f"ssh fleet@127.0.0.1:{ssh.port} -> 127.0.0.1:{cuzk.port}"
        assert ssh.channels >= 1 and cuzk.requests >= 1
        snap = wire.default_cache().get(wire.snapshot_key("ssh-box"))
        assert [c["problem"] for c in snap["consistency"]] == ["no-worker", "no-worker"]  # the race, over ssh
        wait_until(lambda: Source.objects.get(name="ssh-box").ssh_host_key == ssh.host_key_line, 5, "key pinned")


def test_a_changed_host_key_is_refused(collector, key, tmp_path) -> None:
    key_path, public = key
    with CuzkServer("fixture") as cuzk:
        with ForwardingSshServer(tmp_path, public) as first:
            _add("ssh-box", first.port, key_path, cuzk.port)
            wait_until(lambda: Source.objects.get(name="ssh-box").ssh_host_key, 15, "key pinned")
        with ForwardingSshServer(tmp_path, public) as impostor:  # another host key, where the box was
            Source.objects.filter(name="ssh-box").update(ssh_port=impostor.port)
            source = wait_until(lambda: (s := _source("ssh-box")) and s["reason"] == "ssh" and s, 15, "refused")
            assert source["state"] == "unreachable"
            assert "host key" in source["error"]
            assert impostor.channels == 0  # nothing went through the impostor


def test_strict_policy_with_a_known_hosts_file(collector, key, tmp_path) -> None:
    key_path, public = key
    with CuzkServer("fixture") as cuzk, ForwardingSshServer(tmp_path, public) as ssh:
        known = tmp_path / "known_hosts"
        known.write_text(f"[127.0.0.1]:{ssh.port} {ssh.host_key_line}\n")
        _add("strict-box", ssh.port, key_path, cuzk.port, "--known-hosts", "strict", "--known-hosts-file", str(known))
        wait_until(lambda: (_source("strict-box") or {}).get("state") == "online", 15, "online, strict")
        known.write_text(f"[127.0.0.1]:{ssh.port} {asyncssh.generate_private_key('ssh-ed25519').export_public_key('openssh').decode()}")
        Source.objects.filter(name="strict-box").update(interval_secs=0.31)  # an edit: a fresh connection
        wait_until(lambda: (_source("strict-box") or {}).get("reason") == "ssh", 15, "unknown key refused")


def test_a_refused_client_key_and_a_closed_status_port(collector, key, tmp_path) -> None:
    key_path, public = key
    stranger_path = tmp_path / "stranger"
    client_key(stranger_path)
    with ForwardingSshServer(tmp_path, public) as ssh:
        _add("wrong-key", ssh.port, stranger_path, free_port())
        _add("closed-port", ssh.port, key_path, free_port())
        wrong = wait_until(lambda: (s := _source("wrong-key")) and s["state"] == "unreachable" and s, 15, "wrong key")
        assert wrong["reason"] == "ssh" and "permission denied" in wrong["error"]
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
