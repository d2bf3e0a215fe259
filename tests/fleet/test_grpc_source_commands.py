"""addsource --grpc: a cuzk source watched through its gRPC API alone, beside its URL, or over ssh
(a bare port is the remote host's loopback), TLS with a CA file; every mistake named, nothing saved;
the same rules in the admin form."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from statuspanel.fleet.forms import SourceForm
from statuspanel.models import Source

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_grpc_alone_beside_a_url_and_over_ssh(tmp_path) -> None:
    out = run("addsource", "g1", "--kind", "cuzk", "--grpc", "10.0.0.5:9820")
    assert "added source g1 (cuzk, http grpc://10.0.0.5:9820" in out
    g1 = Source.objects.get(name="g1")
    assert (g1.transport, g1.url, g1.grpc_target, g1.grpc_tls) == ("http", "", "10.0.0.5:9820", False)

    run("addsource", "g2", "--kind", "cuzk", "--url", "http://10.0.0.6:9821", "--grpc", "[fd00::6]:9820")
    assert Source.objects.get(name="g2").target() == "http://10.0.0.6:9821 + grpc://[fd00::6]:9820"

    key = tmp_path / "id_ed25519"
    key.write_text("a readable file is all the form checks\n")
    run("addsource", "g3", "--kind", "cuzk", "--ssh", "root@gpu.example.net", "--key", str(key), "--grpc", "9820")
    g3 = Source.objects.get(name="g3")
    assert (g3.grpc_target, g3.remote_port) == ("127.0.0.1:9820", None)
    assert g3.target() == "root@gpu.example.net:22 -> grpc://127.0.0.1:9820"
    assert "grpc://127.0.0.1:9820" in run("listsources")


def test_tls_with_a_ca_file(tmp_path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    run("addsource", "g-tls", "--kind", "cuzk", "--grpc", "gpu.example.net:9820", "--grpc-tls", "--grpc-ca", str(ca))
    source = Source.objects.get(name="g-tls")
    assert source.grpc_tls and source.grpc_ca_path == str(ca) and source.target() == "grpcs://gpu.example.net:9820"


@pytest.mark.parametrize("args,message", [
    (("--kind", "cuzk"), "--url URL, --ssh USER@HOST[:PORT] or --grpc HOST:PORT"),
    (("--kind", "cuzk", "--grpc", "10.0.0.5"), "must look like HOST:PORT"),
    (("--kind", "cuzk", "--grpc", "10.0.0.5:0"), "gRPC port must be a number from 1 to 65535"),
    (("--kind", "cuzk", "--grpc", "bad host!:9820"), "host name or an address"),
    (("--kind", "vastmanager", "--grpc", "10.0.0.5:9820", "--token", "x" * 20), "for cuzk sources"),
    (("--kind", "cuzk", "--grpc", "10.0.0.5:9820", "--grpc-ca", "/nonexistent/ca.pem"), "goes with TLS"),
    (("--kind", "cuzk", "--grpc", "10.0.0.5:9820", "--grpc-tls", "--grpc-ca", "/nonexistent/ca.pem"),
     "not a readable file"),
    (("--kind", "cuzk", "--url", "http://10.0.0.5:9821", "--grpc-tls"), "go with a gRPC target"),
])
def test_bad_grpc_input_is_named_and_nothing_saved(args, message) -> None:
    with pytest.raises(CommandError) as caught:
        run("addsource", "bad", *args)
    assert message in str(caught.value)
    assert not Source.objects.exists()


def test_tls_over_ssh_is_refused(tmp_path) -> None:
    key = tmp_path / "k"
    key.write_text("k\n")
    with pytest.raises(CommandError, match="channel is encrypted already"):
        run("addsource", "bad", "--kind", "cuzk", "--ssh", "root@h", "--key", str(key), "--grpc", "9820", "--grpc-tls")
    assert not Source.objects.exists()


def test_the_admin_form_applies_the_same_rules() -> None:
    form = SourceForm({"name": "adm", "kind": "cuzk", "transport": "http", "grpc_target": "10.0.0.5",
                       "known_hosts_policy": "pin", "interval_secs": 1.5, "enabled": True})
    assert not form.is_valid() and "must look like HOST:PORT" in str(form.errors["grpc_target"])
    form = SourceForm({"name": "adm", "kind": "cuzk", "transport": "http", "grpc_target": "10.0.0.5:9820",
                       "known_hosts_policy": "pin", "interval_secs": 1.5, "enabled": True})
    assert form.is_valid(), form.errors
    assert form.save().grpc_target == "10.0.0.5:9820"
