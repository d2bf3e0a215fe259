"""A circuit compiled and set up for BN254 (circom's default prime) is refused everywhere with a
message saying how to get a BLS12-381 one: zkey, wtns and r1cs readers, and `addcircuit`."""
from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from gpu_engine.circom.binfile import CircomFormatError
from gpu_engine.circom.r1cs import read_r1cs
from gpu_engine.circom.wtns import read_wtns
from gpu_engine.circom.zkey import read_zkey
from gpu_engine.models import Circuit
from tests.circom import tools

ADVICE = r"circom --prime bls12381.*bls12381"


@pytest.fixture(scope="session")
def bn254_files(circom_tools) -> dict:
    """The multiplier compiled for BN254 with a 2^8 bn128 ceremony (seconds; cached by content)."""
    source = tools.CIRCUITS_DIR / "multiplier.circom"
    final = tools.FIXTURE_CACHE / "bn254" / f"multiplier-{tools.source_digest(source)}"
    done = final / "multiplier.zkey"
    if not done.exists():
        with tools.file_lock(final.with_suffix(".lock")):
            if not done.exists():
                with tools._building(final) as tmp:
                    tools.run([tools.tool_bin("circom2"), source, "--r1cs", "--wasm", "-l", tools.NODE_MODULES,
                               "-o", tmp])
                    tools.snarkjs("powersoftau", "new", "bn128", "8", tmp / "0.ptau")
                    tools.snarkjs("powersoftau", "prepare", "phase2", tmp / "0.ptau", tmp / "p.ptau")
                    tools.snarkjs("groth16", "setup", tmp / "multiplier.r1cs", tmp / "p.ptau", tmp / "multiplier.zkey")
                    (tmp / "in.json").write_text(json.dumps({"a": "3", "b": "11"}))
                    tools.snarkjs("wtns", "calculate", tmp / "multiplier_js" / "multiplier.wasm", tmp / "in.json",
                                  tmp / "w.wtns")
    return {"zkey": done, "r1cs": final / "multiplier.r1cs", "wtns": final / "w.wtns"}


def test_readers_refuse_bn254_saying_how_to_compile(bn254_files):
    for reader, path in ((read_zkey, bn254_files["zkey"]), (read_r1cs, bn254_files["r1cs"]),
                         (read_wtns, bn254_files["wtns"])):
        with pytest.raises(CircomFormatError, match=r"BN254") as info:
            reader(path.read_bytes())
        assert "circom --prime bls12381" in str(info.value)


@pytest.mark.django_db
def test_addcircuit_refuses_bn254_and_registers_nothing(bn254_files, settings, tmp_path):
    settings.CIRCUITS_DIR = tmp_path / "circuits"
    with pytest.raises(CommandError, match=ADVICE):
        call_command("addcircuit", "bn", "--zkey", str(bn254_files["zkey"]))
    assert not Circuit.objects.exists()
    assert not list((tmp_path / "circuits").glob("keys/*"))
