"""Where a source may point, one rule set for the admin and `addsource`: re-pointing a source (URL,
ssh host or port) leaves its stored token behind unless it is given again, and link-local or
cloud-metadata targets are refused unless FLEET_ALLOW_LINK_LOCAL allows them; at poll time the
resolved addresses are checked too, so a DNS name cannot bring such a target in."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from gpu_engine import wire
from statuspanel.fleet.transport import SourceConfig
from statuspanel.models import Source
from tests.fleet import netns
from tests.fleet.conftest import source_form, wait_until
from tests.process_support import free_port

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
TOKEN = "stored-secret-token-0123456789"
NEW_TOKEN = "another-secret-token-987654321"


def _admin_form(**overrides: str) -> dict[str, str]:
    return source_form(**{"name": "box", "url": "http://10.0.0.7:9820", "token": "", **overrides})


def test_the_admin_clears_the_token_of_a_repointed_source(admin_client) -> None:
    source = Source.objects.create(name="box", kind="cuzk", url="http://10.0.0.7:9820", token=TOKEN)
    change = f"/admin/statuspanel/source/{source.pk}/change/"
    assert admin_client.post(change, _admin_form(url="http://203.0.113.9:9820")).status_code == 302
    source.refresh_from_db()
    assert (source.url, source.token) == ("http://203.0.113.9:9820", "")
    assert admin_client.post(change, _admin_form(url="http://10.0.0.7:9820", token=NEW_TOKEN)).status_code == 302
    source.refresh_from_db()
    assert source.token == NEW_TOKEN  # given again with the edit: kept


def test_a_repointed_vastmanager_source_must_be_given_its_token_again(admin_client) -> None:
    source = Source.objects.create(name="box", kind="vastmanager", url="http://10.0.0.7:8000", token=TOKEN)
    change = f"/admin/statuspanel/source/{source.pk}/change/"
    refused = admin_client.post(change, _admin_form(kind="vastmanager", url="http://203.0.113.9:8000"))
    assert refused.status_code == 200 and "give it again" in refused.content.decode()
    source.refresh_from_db()
    assert (source.url, source.token) == ("http://10.0.0.7:8000", TOKEN)  # nothing saved


def test_addsource_replace_follows_the_same_rule(tmp_path) -> None:
    call_command("addsource", "box", "--kind", "cuzk", "--url", "http://10.0.0.7:9820", "--token", TOKEN,
                 stdout=open(os.devnull, "w"))
    call_command("addsource", "box", "--kind", "cuzk", "--url", "http://10.0.0.7:9820", "--interval", "2",
                 "--replace", stdout=open(os.devnull, "w"))
    assert Source.objects.get(name="box").token == TOKEN  # the same target: kept
    call_command("addsource", "box", "--kind", "cuzk", "--url", "http://203.0.113.9:9820", "--replace",
                 stdout=open(os.devnull, "w"))
    assert Source.objects.get(name="box").token == ""
    key = tmp_path / "id"
    key.write_text("key")
    ssh = Source.objects.create(name="sshbox", kind="cuzk", transport="ssh", ssh_user="u", ssh_host="10.0.0.7",
                                ssh_key_path=str(key), remote_port=9820, token=TOKEN)
    call_command("addsource", "sshbox", "--kind", "cuzk", "--ssh", "u@10.0.0.7:2222", "--key", str(key),
                 "--remote-port", "9820", "--replace", stdout=open(os.devnull, "w"))
    ssh.refresh_from_db()
    assert (ssh.ssh_port, ssh.token) == (2222, "")


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data", "http://169.254.10.20:9820",
                                 "http://[fe80::1]:9820", "http://[::ffff:169.254.169.254]:80",
                                 "http://metadata.google.internal/computeMetadata/v1", "http://100.100.100.200/"])
def test_link_local_and_metadata_urls_are_refused(url) -> None:
    with pytest.raises(CommandError) as refused:
        call_command("addsource", "meta", "--kind", "cuzk", "--url", url, stdout=open(os.devnull, "w"))
    assert "blocked" in str(refused.value) and "FLEET_ALLOW_LINK_LOCAL" in str(refused.value)
    assert not Source.objects.exists()


def test_a_link_local_ssh_host_is_refused_and_the_setting_allows_them(settings, tmp_path) -> None:
    key = tmp_path / "id"
    key.write_text("key")
    with pytest.raises(CommandError, match="link-local"):
        call_command("addsource", "meta", "--kind", "cuzk", "--ssh", "u@169.254.0.9", "--key", str(key),
                     "--remote-port", "9820", stdout=open(os.devnull, "w"))
    settings.FLEET_ALLOW_LINK_LOCAL = True
    call_command("addsource", "meta", "--kind", "cuzk", "--url", "http://169.254.169.254/", stdout=open(os.devnull, "w"))
    assert Source.objects.filter(name="meta").exists()


def test_a_stored_link_local_source_is_blocked_at_poll_time(collect) -> None:
    collect([SourceConfig(id=1, name="old-row", kind="cuzk", transport="http", url=f"http://169.254.169.254:{free_port()}",
                          interval_secs=0.3)])
    source = wait_until(lambda: (s := wire.default_cache().get(wire.snapshot_key("old-row"))) and
                        s["source"]["state"] == "unreachable" and s["source"], 10, "blocked")
    assert source["reason"] == "blocked" and "link-local" in source["error"]


POLL_IN_NAMESPACE = """
import asyncio, os, sys
sys.path.insert(0, {root!r})
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vastmanager.settings")
import django; django.setup()
from statuspanel.fleet.errors import Unreachable
from statuspanel.fleet.transport import SourceConfig, fetch, make_client

async def poll(host, allow):
    cfg = SourceConfig(id=1, name="n", kind="cuzk", transport="http", url=f"http://{{host}}:{port}",
                       interval_secs=1.0, allow_link_local=allow)
    client = make_client(cfg)
    try:
        return f"ok {{len(await fetch(client, cfg))}}"
    except Unreachable as exc:
        return f"{{exc.reason}}: {{exc}}"
    finally:
        await client.aclose()

for host, allow in (("sneaky.fleet.test", False), ("fine.fleet.test", False), ("sneaky.fleet.test", True)):
    print(host, allow, asyncio.run(poll(host, allow)), flush=True)
"""


@pytest.mark.skipif(netns.unavailable_reason() is not None, reason=str(netns.unavailable_reason()))
def test_a_name_that_resolves_to_a_link_local_address_is_refused_at_poll_time() -> None:
    """In a namespace of its own, whose hosts file (ip netns exec mounts /etc/netns/NAME/hosts) maps
    one name to 169.254.169.254, where a status server really listens."""
    port = 9820
    with netns.NetnsLab() as lab:
        box = lab.host("dns")
        etc = Path("/etc/netns") / box.name
        etc.mkdir(parents=True, exist_ok=True)
        try:
            (etc / "hosts").write_text("127.0.0.1 localhost fine.fleet.test\n169.254.169.254 sneaky.fleet.test\n")
            box.run("ip", "addr", "add", "169.254.169.254/32", "dev", "lo")
            env = dict(os.environ, PYTHONPATH=str(ROOT))
            for host in ("169.254.169.254", "127.0.0.1"):
                server = box.popen([sys.executable, str(ROOT / "tests/fleet/cuzk_server.py"), "--host", host,
                                    "--port", str(port)], stdout=subprocess.PIPE, text=True, env=env)
                assert server.stdout.readline().startswith("listening")
            script = POLL_IN_NAMESPACE.format(root=str(ROOT), port=port)
            done = box.run(sys.executable, "-c", script, check=False)
        finally:
            for name in ("hosts",):
                (etc / name).unlink(missing_ok=True)
            etc.rmdir()
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 3, done.stderr[-2000:]
    assert lines[0].startswith("sneaky.fleet.test False blocked: blocked: sneaky.fleet.test resolves to "
                               "169.254.169.254 is a link-local address"), lines[0]
    assert lines[1].startswith("fine.fleet.test False ok "), lines[1]
    assert lines[2].startswith("sneaky.fleet.test True ok "), lines[2]  # it was reachable: the guard refused it
