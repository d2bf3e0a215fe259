"""`manage.py addcircuit NAME --zkey FILE [--wasm FILE [--sym FILE]] [--r1cs FILE] [--label "Full label"]`."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.files import File
from django.core.management.base import BaseCommand, CommandError

from gpu_engine.circom.forms import CircuitForm, CircuitNameTaken
from gpu_engine.circom.signals import default_sym_path


class Command(BaseCommand):
    help = ("Register a circom circuit (snarkjs Groth16 zkey for BLS12-381) as a proof kind; the files are "
            "copied into the data directory, the key is converted once and its verifying key stored.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", help="the proof kind's name (lower-case letters, digits, . _ -)")
        parser.add_argument("--zkey", required=True, type=Path, help="the circuit's final .zkey")
        parser.add_argument("--wasm", type=Path, help="circom's witness calculator (jobs may then send inputs)")
        parser.add_argument("--sym", type=Path, help="circom's .sym for the wasm (default: circom's layout beside it)")
        parser.add_argument("--r1cs", type=Path, help="the .r1cs: every witness is checked before proving")
        parser.add_argument("--label", default="", help="the full label the panel shows (default: the name)")

    def handle(self, *args: Any, **opts: Any) -> None:
        paths = {"zkey": opts["zkey"], "wasm": opts["wasm"], "r1cs": opts["r1cs"], "sym": opts["sym"]}
        if paths["wasm"] is not None and paths["sym"] is None:
            guess = default_sym_path(paths["wasm"])
            paths["sym"] = guess if guess.is_file() else None
        handles = {}
        try:
            for field, path in paths.items():
                if path is None:
                    continue
                if not path.is_file():
                    raise CommandError(f"--{field} {path}: no such file")
                handles[field] = File(open(path, "rb"), name=path.name)
            form = CircuitForm({"name": opts["name"], "label": opts["label"]}, handles)
            valid = form.is_valid()
            if valid:
                try:
                    circuit = form.save()
                except CircuitNameTaken:  # lost a race for the name: the same answer as a plain duplicate
                    valid = False
            if not valid:
                lines = [f"{field}: {msg}" if field != "__all__" else str(msg)
                         for field, msgs in form.errors.items() for msg in msgs]
                raise CommandError("circuit not registered:\n  " + "\n  ".join(lines))
        finally:
            for fh in handles.values():
                fh.close()
        signals = ", ".join(f"{k}[{v}]" if v > 1 else k for k, v in circuit.input_signals.items()) or "-"
        if circuit.wasm_file and not circuit.sym_file:
            signals = "checked by the wasm (no .sym: names not listed)"
        self.stdout.write(
            f"registered {circuit.name} ({circuit.label}): {circuit.num_constraints} constraints, "
            f"{circuit.num_wires} wires, {circuit.num_public} public signals, domain 2^"
            f"{circuit.domain_size.bit_length() - 1}; inputs: {signals}; "
            f"constraint check: {'yes' if circuit.r1cs_file else 'no (no --r1cs)'}")
