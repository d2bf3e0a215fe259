"""Registering a circuit: `addcircuit` and the admin apply one rule set; the zkey is stored under its
content hash with its converted key beside it; the header numbers are the circuit's; the verifying
key is served exactly as snarkjs exports it; circuits are listed; bad registrations leave nothing."""
from __future__ import annotations

import hashlib

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from gpu_engine.circom import api as circom_api
from gpu_engine.circom import registry
from gpu_engine.kinds import kind_label
from gpu_engine.models import Circuit
from tests.circom.registered import register
from tests.credentials import AUTH

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _circuits_dir(settings, tmp_path, api_token):
    settings.CIRCUITS_DIR = tmp_path / "circuits"


def test_addcircuit_stores_by_hash_reads_the_header_and_converts_once(multiplier_circuit, settings):
    c = register(multiplier_circuit, "mult", label="Multiplier chain (64 links)")
    digest = hashlib.sha256(multiplier_circuit.zkey.read_bytes()).hexdigest()
    assert c.zkey_sha256 == digest and c.zkey_file == f"keys/{digest}.zkey"
    stored = settings.CIRCUITS_DIR / c.zkey_file
    assert stored.read_bytes() == multiplier_circuit.zkey.read_bytes()
    assert (settings.CIRCUITS_DIR / c.key_file).parent == stored.parent
    info = multiplier_circuit.info
    assert (c.num_constraints, c.num_wires, c.num_public) == (info["constraints"], info["wires"],
                                                              info["outputs"] + info["public_inputs"])
    assert c.domain_size == 128 and c.curve == "bls12381"
    assert c.input_signals == {"b": 1, "a": 1} or c.input_signals == {"a": 1, "b": 1}
    key = circom_api.load(registry.circuit_ref(c))
    assert key.num_vars == c.num_wires and len(key.h_g1) == c.domain_size
    assert kind_label("mult") == "Multiplier chain (64 links)"


def test_vkey_endpoint_is_snarkjs_export_and_circuits_are_listed(client, multiplier_circuit, multi_public_circuit):
    register(multiplier_circuit, "mult")
    register(multi_public_circuit, "wsum", wasm=False, r1cs=False, label="Weighted sum")
    response = client.get("/api/circuits/mult/vkey", **AUTH)
    assert response.status_code == 200
    assert response.json() == multiplier_circuit.vkey
    assert client.get("/api/circuits/wsum/vkey", **AUTH).json() == multi_public_circuit.vkey
    listed = client.get("/api/circuits", **AUTH).json()["circuits"]
    assert [c["name"] for c in listed] == ["mult", "wsum"]
    wsum = listed[1]
    assert wsum["label"] == "Weighted sum" and wsum["accepts_inputs"] is False and wsum["public_signals"] == 6
    assert client.get("/api/circuits/nope/vkey", **AUTH).status_code == 404
    assert client.get("/api/circuits").status_code == 401


@pytest.mark.parametrize("name, message", [("porep-c2", "built-in proof kind"), ("Bad Name", "lower-case"),
                                           ("x" * 33, "at most 32")])
def test_bad_names_are_refused(multiplier_circuit, name, message):
    with pytest.raises(CommandError, match=message):
        call_command("addcircuit", name, "--zkey", str(multiplier_circuit.zkey))


def test_duplicate_name_and_mismatched_r1cs_are_refused(multiplier_circuit, multi_public_circuit, settings):
    register(multiplier_circuit, "mult", wasm=False)
    with pytest.raises(CommandError, match="already registered"):
        call_command("addcircuit", "mult", "--zkey", str(multiplier_circuit.zkey))
    with pytest.raises(CommandError, match="r1cs: r1cs .* is not the circuit of the zkey"):
        call_command("addcircuit", "other", "--zkey", str(multiplier_circuit.zkey), "--r1cs",
                     str(multi_public_circuit.r1cs))
    with pytest.raises(CommandError, match="wasm: the witness calculator makes"):
        call_command("addcircuit", "other", "--zkey", str(multiplier_circuit.zkey), "--wasm",
                     str(multi_public_circuit.wasm), "--sym", str(multi_public_circuit.sym))
    assert list(Circuit.objects.values_list("name", flat=True)) == ["mult"]
    assert not list(settings.CIRCUITS_DIR.glob(".staging-*"))


def test_not_a_zkey_is_refused_with_its_reason(tmp_path, multiplier_circuit):
    junk = tmp_path / "x.zkey"
    junk.write_bytes(multiplier_circuit.r1cs.read_bytes())
    with pytest.raises(CommandError, match="zkey: zkey: bad magic"):
        call_command("addcircuit", "junk", "--zkey", str(junk))
    with pytest.raises(CommandError, match="no such file"):
        call_command("addcircuit", "junk", "--zkey", str(tmp_path / "missing.zkey"))


def test_admin_registers_with_the_same_rules(client, multiplier_circuit):
    client.force_login(get_user_model().objects.create_superuser("root", "r@example.invalid", "pw-test-only"))
    url = "/admin/gpu_engine/circuit/add/"
    assert client.get(url).status_code == 200

    def upload(path, name):
        return SimpleUploadedFile(name, path.read_bytes())

    bad = client.post(url, {"name": "porep-c2", "zkey": upload(multiplier_circuit.zkey, "m.zkey")})
    assert bad.status_code == 200 and "built-in proof kind" in bad.content.decode()
    corrupt = client.post(url, {"name": "m2", "zkey": SimpleUploadedFile("m.zkey", b"zkey" + bytes(20))})
    assert corrupt.status_code == 200 and "zkey:" in corrupt.content.decode()
    ok = client.post(url, {"name": "mult", "label": "Multiplier chain", "zkey": upload(multiplier_circuit.zkey, "m.zkey"),
                           "wasm": upload(multiplier_circuit.wasm, "m.wasm"), "sym": upload(multiplier_circuit.sym, "m.sym"),
                           "r1cs": upload(multiplier_circuit.r1cs, "m.r1cs")})
    assert ok.status_code == 302, ok.content.decode()[:2000]
    c = Circuit.objects.get(name="mult")
    assert c.label == "Multiplier chain" and c.wasm_file and c.r1cs_file and c.input_signals
    change = client.get(f"/admin/gpu_engine/circuit/{c.pk}/change/")
    assert change.status_code == 200 and c.zkey_sha256 in change.content.decode()
    assert client.get("/admin/gpu_engine/circuit/").status_code == 200


def test_an_r1cs_with_other_coefficients_is_refused(multiplier_circuit, tmp_path):
    """Same counts, one coefficient changed: the r1cs is not the zkey's circuit (the witness check
    reuses the zkey's A and B rows, so they must be the r1cs's)."""
    from tests.circom.containers import replace, split

    raw = multiplier_circuit.r1cs.read_bytes()
    body = bytearray(dict(split(raw)[1])[2])
    value = int.from_bytes(body[8:40], "little")  # the first A term of constraint 0
    body[8:40] = (value + 1 if value < 1000 else 5).to_bytes(32, "little")
    other = tmp_path / "other.r1cs"
    other.write_bytes(replace(raw, 2, bytes(body)))
    with pytest.raises(CommandError, match="r1cs: not the circuit of the zkey: matrix A differs .* constraint 0"):
        call_command("addcircuit", "m", "--zkey", str(multiplier_circuit.zkey), "--r1cs", str(other))


def test_job_admin_filters_and_labels_circuit_jobs(client, multiplier_circuit):
    from tests.circom.registered import post_job

    register(multiplier_circuit, "mult", label="Multiplier chain (64 links)")
    post_job(client, {"proof_kind": "mult", "job_id": "admin-circuit-job", "inputs": [{"a": "1", "b": "2"}]})
    client.force_login(get_user_model().objects.create_superuser("root", "r@example.invalid", "pw-test-only"))
    body = client.get("/admin/gpu_engine/proofjob/?proof_kind__exact=mult").content.decode()
    assert "admin-circuit-job" in body and "Multiplier chain (64 links)" in body
    assert "admin-circuit-job" not in client.get("/admin/gpu_engine/proofjob/?proof_kind__exact=porep-c2"
                                                 ).content.decode()
