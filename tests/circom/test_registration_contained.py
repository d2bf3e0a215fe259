"""Registration under attack and accident: a witness calculator that never stops talking is refused at
its deadline (the command and the admin alike, never hanging), two registrations racing for one name
leave one circuit and one "already registered" answer (exit 1, no traceback), and a wasm without its
.sym registers (its inputs are then checked by asking the wasm)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from gpu_engine.circom import registry
from gpu_engine.models import Circuit
from tests.circom import hostile_wasm

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _circuits_dir(settings, tmp_path, api_token):
    settings.CIRCUITS_DIR = tmp_path / "circuits"
    settings.CIRCUIT_WITNESS_TIMEOUT = 1.0


@pytest.mark.django_db
def test_addcircuit_refuses_a_calculator_whose_messages_never_end(multiplier_circuit, tmp_path, settings):
    wires = multiplier_circuit.info["wires"]
    wasm = hostile_wasm.endless_messages(tmp_path / "chatty.wasm", wires)
    started = time.monotonic()
    with pytest.raises(CommandError, match=r"wasm: the witness calculator ran past its deadline of 1 s"):
        call_command("addcircuit", "chatty", "--zkey", str(multiplier_circuit.zkey), "--wasm", str(wasm))
    assert time.monotonic() - started < 30
    assert not Circuit.objects.exists()
    assert not list(settings.CIRCUITS_DIR.glob(".staging-*"))


@pytest.mark.django_db
def test_the_admin_refuses_it_the_same_way_and_keeps_serving(client, multiplier_circuit, tmp_path):
    get_user_model().objects.create_superuser("admin", "a@example.com", "pw-admin-123456")
    client.login(username="admin", password="pw-admin-123456")
    wasm = hostile_wasm.endless_messages(tmp_path / "chatty.wasm", multiplier_circuit.info["wires"])
    files = {"zkey": SimpleUploadedFile("c.zkey", multiplier_circuit.zkey.read_bytes()),
             "wasm": SimpleUploadedFile("c.wasm", wasm.read_bytes())}
    response = client.post("/admin/gpu_engine/circuit/add/", {"name": "chatty", "label": "", **files})
    assert response.status_code == 200
    assert "ran past its deadline of 1 s" in response.content.decode()
    assert client.get("/admin/gpu_engine/circuit/").status_code == 200
    assert not Circuit.objects.exists()


@pytest.mark.django_db
def test_a_circuit_registers_without_its_sym(multiplier_circuit, capsys):
    # circom writes the .sym beside the wasm's folder: a wasm copied elsewhere has none to be found
    lone = registry.circuits_dir().parent / "lone_js"
    lone.mkdir(parents=True)
    (lone / "lone.wasm").write_bytes(multiplier_circuit.wasm.read_bytes())
    call_command("addcircuit", "nosym", "--zkey", str(multiplier_circuit.zkey), "--wasm", str(lone / "lone.wasm"))
    c = Circuit.objects.get(name="nosym")
    assert c.wasm_file and not c.sym_file and c.input_signals == {}
    assert "checked by the wasm" in capsys.readouterr().out


@pytest.mark.django_db
def test_a_name_taken_while_the_files_are_validated_gets_the_duplicate_answer(multiplier_circuit, monkeypatch):
    """The race made certain: another registration stores the name while this one reads its zkey."""
    from gpu_engine.circom.forms import CircuitForm

    validate = CircuitForm._validate_files

    def competitor_wins_meanwhile(self, data):
        validate(self, data)
        if not Circuit.objects.filter(name="raced").exists():
            monkeypatch.setattr(CircuitForm, "_validate_files", validate)
            call_command("addcircuit", "raced", "--zkey", str(multiplier_circuit.zkey))

    monkeypatch.setattr(CircuitForm, "_validate_files", competitor_wins_meanwhile)
    with pytest.raises(CommandError) as err:
        call_command("addcircuit", "raced", "--zkey", str(multiplier_circuit.zkey))
    assert str(err.value) == "circuit not registered:\n  name: a circuit named 'raced' is already registered"
    assert err.value.returncode == 1
    assert Circuit.objects.filter(name="raced").count() == 1


RACE = """
import sys, django
django.setup()
from django.core.management import call_command, CommandError
try:
    call_command("addcircuit", "raced", "--zkey", sys.argv[1])
except CommandError as exc:
    print("REFUSED:", exc, file=sys.stderr)
    sys.exit(1)
"""


def _racers(env: dict, zkey: Path, n: int) -> list[subprocess.CompletedProcess]:
    procs = [subprocess.Popen([sys.executable, "-c", RACE, str(zkey)], cwd=ROOT, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(n)]
    return [subprocess.CompletedProcess(p.args, p.wait(300), *p.communicate()) for p in procs]


def test_two_registrations_racing_for_one_name_leave_one_circuit_and_one_clear_refusal(multiplier_circuit,
                                                                                       tmp_path):
    """Real processes on a shared SQLite file: both pass the name check while the zkey is read, the loser's
    insert fails; it must answer as a plain duplicate does."""
    env = {**os.environ, "VASTMANAGER_DATA_DIR": str(tmp_path / "data"),
           "DATABASE_URL": f"sqlite:///{tmp_path / 'race.sqlite3'}", "DJANGO_SETTINGS_MODULE": "vastmanager.settings",
           "VASTMANAGER_CIRCUITS_DIR": str(tmp_path / "race-circuits")}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=300)
    results = _racers(env, multiplier_circuit.zkey, 2)
    codes = sorted(r.returncode for r in results)
    assert codes == [0, 1], [(r.returncode, r.stderr[-800:]) for r in results]
    loser = next(r for r in results if r.returncode == 1)
    assert "already registered" in loser.stderr and "Traceback" not in loser.stderr, loser.stderr
    assert "IntegrityError" not in loser.stderr
