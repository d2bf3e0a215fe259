"""Registering a circuit: one rule set (this form) for `manage.py addcircuit` and the admin.

Validation reads everything once: the zkey fully (every point checked, the curve, the sizes),
the r1cs and the wasm when given (cross-checked with the zkey), the input signals from the
wasm and its .sym. Saving copies each file into CIRCUITS_DIR under its content hash, writes
the converted key next to the zkey (points and coefficients in the engine's forms, so no proof
converts them again), and stores the header numbers and snarkjs's verification key.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from django import forms
from django.db import IntegrityError, transaction

from gpu_engine.circom import housekeeping, registry, snarkjs_json
from gpu_engine.circom.binfile import CircomFormatError
from gpu_engine.circom.keycache import dump_key, write_key
from gpu_engine.circom.r1cs import read_r1cs, same_ab
from gpu_engine.circom.zkey import read_zkey
from gpu_engine.groth16.field import R
from gpu_engine.groth16.keys import VerifyingKey
from gpu_engine.kinds import PROOF_KINDS
from gpu_engine.models import Circuit

KEYS_SUBDIR = "keys"


class CircuitNameTaken(ValueError):
    """Another registration stored the same name between this one's check and its save."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def taken_message(name: str) -> str:
    return f"a circuit named {name!r} is already registered"


class CircuitForm(forms.Form):
    name = forms.CharField(max_length=32, help_text="Lower-case letters, digits, . _ - (the proof kind's name).")
    label = forms.CharField(max_length=200, required=False, help_text="The full label the panel shows.")
    zkey = forms.FileField(help_text="snarkjs Groth16 key for BLS12-381 (circom --prime bls12381).")
    wasm = forms.FileField(required=False, help_text="circom's witness calculator: jobs may then send inputs.")
    sym = forms.FileField(required=False, help_text="circom's .sym (the input signal names, for inputs checked by "
                                                    "name; without it the wasm is asked).")
    r1cs = forms.FileField(required=False, help_text="The constraints: witnesses are checked before proving.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._staging: Path | None = None
        self._staging_lock: int | None = None
        self.staged: dict[str, Path] = {}

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if not registry.NAME_RE.fullmatch(name):
            raise forms.ValidationError(f"{name!r}: use 1-32 lower-case letters, digits, '.', '_' or '-', "
                                        "starting with a letter or digit")
        if name in PROOF_KINDS:
            raise forms.ValidationError(f"{name!r} is a built-in proof kind")
        if Circuit.objects.filter(name=name).exists():
            raise forms.ValidationError(taken_message(name))
        return name

    def _stage(self, field: str) -> Path | None:
        upload = self.cleaned_data.get(field)
        if not upload:
            return None
        if self._staging is None:
            root = registry.circuits_dir()
            root.mkdir(parents=True, exist_ok=True)
            housekeeping.sweep_staging(root)  # what a killed registration left
            self._staging = Path(tempfile.mkdtemp(prefix=housekeeping.STAGING_PREFIX, dir=root))
            self._staging_lock = housekeeping.lock_staging(self._staging)
        path = self._staging / f"upload.{field}"
        with open(path, "wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        self.staged[field] = path
        return path

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if self.errors:
            return data
        try:
            self._validate_files(data)
        except forms.ValidationError:
            self.discard()
            raise
        return data

    def _validate_files(self, data: dict[str, Any]) -> None:
        zkey_path = self._stage("zkey")
        if zkey_path is None:  # a required field: clean() returns before this without one
            raise forms.ValidationError({"zkey": "a .zkey file is required"})
        try:
            zkey = read_zkey(zkey_path.read_bytes())
        except CircomFormatError as exc:
            raise forms.ValidationError({"zkey": str(exc)}) from None
        h = zkey.header
        data["_zkey"], data["_zkey_sha256"] = zkey, _sha256(zkey_path)
        if (r1cs_path := self._stage("r1cs")) is not None:
            try:
                r1cs = read_r1cs(r1cs_path.read_bytes())
            except CircomFormatError as exc:
                raise forms.ValidationError({"r1cs": str(exc)}) from None
            if (r1cs.num_wires, r1cs.num_public, r1cs.num_constraints) != (h.num_vars, h.num_public,
                                                                            h.num_constraints):
                raise forms.ValidationError({"r1cs": (
                    f"r1cs ({r1cs.num_wires} wires, {r1cs.num_public} public, {r1cs.num_constraints} constraints) "
                    f"is not the circuit of the zkey ({h.num_vars}, {h.num_public}, {h.num_constraints})")})
            differs = same_ab(r1cs, zkey.a_coeffs, zkey.b_coeffs)
            if differs:
                raise forms.ValidationError({"r1cs": f"not the circuit of the zkey: {differs}"})
        wasm_path, sym_path = self._stage("wasm"), self._stage("sym")
        data["_signals"] = {}
        if wasm_path is not None:
            data["_signals"] = self._wasm_signals(wasm_path, sym_path, h.num_vars)
        elif sym_path is not None:
            raise forms.ValidationError({"sym": "a .sym is only used together with the wasm"})

    @staticmethod
    def _wasm_signals(wasm_path: Path, sym_path: Path | None, num_vars: int) -> dict[str, int]:
        from gpu_engine.circom.inputs import WitnessError
        from gpu_engine.circom.signals import signals_of
        from gpu_engine.circom.witness import WitnessCalculator

        try:
            calc = WitnessCalculator(wasm_path, registry.witness_bounds())
            if calc.prime != R:
                raise forms.ValidationError({"wasm": "the witness calculator is not for BLS12-381 "
                                                     "(compile with circom --prime bls12381)"})
            if calc.witness_size != num_vars:
                raise forms.ValidationError({"wasm": f"the witness calculator makes {calc.witness_size} wires, "
                                                     f"the zkey's circuit has {num_vars}"})
            # Without the .sym the names stay unknown: submitted inputs are then checked by the wasm.
            return signals_of(calc, sym_path) if sym_path is not None else {}
        except WitnessError as exc:
            raise forms.ValidationError({"wasm": str(exc)}) from None

    def discard(self) -> None:
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)
            self._staging = None
        if self._staging_lock is not None:
            os.close(self._staging_lock)
            self._staging_lock = None

    def save(self) -> Circuit:
        """Files into place by content hash, the converted key beside the zkey, then the row."""
        data = self.cleaned_data
        zkey, digest = data["_zkey"], data["_zkey_sha256"]
        keys = registry.circuits_dir() / KEYS_SUBDIR
        keys.mkdir(parents=True, exist_ok=True)
        try:
            stored: dict[str, str] = {}
            for field, suffix in (("zkey", ".zkey"), ("wasm", ".wasm"), ("sym", ".sym"), ("r1cs", ".r1cs")):
                src = self.staged.get(field)
                if src is None:
                    stored[field] = ""
                    continue
                name = f"{digest if field == 'zkey' else _sha256(src)}{suffix}"
                dest = keys / name
                if not dest.exists():
                    shutil.move(src, dest)
                stored[field] = f"{KEYS_SUBDIR}/{name}"
            key_rel = f"{KEYS_SUBDIR}/{digest}.key"
            if not (registry.circuits_dir() / key_rel).exists():
                write_key(registry.circuits_dir() / key_rel, dump_key(zkey, digest))
            h = zkey.header
            vk = VerifyingKey(zkey.alpha_g1, zkey.beta_g2, zkey.gamma_g2, zkey.delta_g2, zkey.ic)
            try:
                with transaction.atomic():
                    circuit = Circuit.objects.create(
                        name=data["name"], label=data.get("label") or data["name"], zkey_sha256=digest,
                        zkey_file=stored["zkey"], key_file=key_rel, wasm_file=stored["wasm"], sym_file=stored["sym"],
                        r1cs_file=stored["r1cs"], num_constraints=h.num_constraints, num_wires=h.num_vars,
                        num_public=h.num_public, domain_size=h.domain_size, input_signals=data["_signals"],
                        vkey=snarkjs_json.verification_key(vk),
                    )
            except IntegrityError:
                # A concurrent registration took the name after clean_name (the files stored by content
                # hash may be the winner's too, so they stay).
                name = data["name"]
                if Circuit.objects.filter(name=name).exists():
                    self.add_error("name", taken_message(name))  # (drops "name" from cleaned_data)
                    raise CircuitNameTaken(taken_message(name)) from None
                raise
        finally:
            self.discard()
        registry.forget_labels()
        return circuit
