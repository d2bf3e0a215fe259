"""gRPC over TLS when asked: a daemon behind a certificate of a private CA is online with that CA
(`--grpc-ca`), and `unreachable` with reason `tls` against the system's roots or a plaintext port."""
from __future__ import annotations

import datetime
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from gpu_engine import wire
from statuspanel.fleet.transport import SourceConfig
from tests.fleet.conftest import wait_until
from tests.fleet.cuzk_grpc_server import GPU_NAME, CuzkGrpcServer


def _self_signed() -> tuple[bytes, bytes]:
    """A key and a certificate for 127.0.0.1 and localhost (its own CA)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cuzk test daemon")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return key_pem, cert.public_bytes(serialization.Encoding.PEM)


def _snap(name: str) -> dict | None:
    return wire.default_cache().get(wire.snapshot_key(name))


@pytest.fixture(scope="module")
def tls_pair() -> tuple[bytes, bytes]:
    return _self_signed()


def test_tls_with_the_daemons_ca_is_online_and_without_it_refused(collect, tls_pair, tmp_path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_bytes(tls_pair[1])
    with CuzkGrpcServer("script", tls=tls_pair) as tls_server, CuzkGrpcServer("script") as plain:
        def cfg(i: int, name: str, target: str, **extra) -> SourceConfig:
            return SourceConfig(id=i, name=name, kind="cuzk", transport="http", grpc_target=target, grpc_tls=True,
                                interval_secs=0.3, **extra)

        collect([cfg(1, "tls-ok", tls_server.target, grpc_ca_path=str(ca)),
                 cfg(2, "tls-system-roots", tls_server.target),
                 cfg(3, "tls-to-plaintext", plain.target, grpc_ca_path=str(ca))])
        ok = wait_until(lambda: (s := _snap("tls-ok")) and s["source"]["state"] == "online" and s, 10, "online")
        assert ok["gpus"][0]["name"] == GPU_NAME and ok["source"]["target"] == f"grpcs://{tls_server.target}"
        for name in ("tls-system-roots", "tls-to-plaintext"):
            source = wait_until(lambda: (s := _snap(name)) and s["source"]["state"] == "unreachable" and s, 10,
                                f"{name} unreachable")["source"]
            assert source["reason"] == "tls", source


def test_a_ca_file_gone_since_it_was_saved_is_a_tls_reason(collect, tmp_path) -> None:
    collect([SourceConfig(id=1, name="tls-gone", kind="cuzk", transport="http", grpc_target="127.0.0.1:9",
                          grpc_tls=True, grpc_ca_path=str(tmp_path / "removed.pem"), interval_secs=0.3)])
    source = wait_until(lambda: (s := _snap("tls-gone")) and s["source"]["state"] == "unreachable" and s, 10,
                        "unreachable")["source"]
    assert source["reason"] == "tls" and "cannot read the CA file" in source["error"], source
