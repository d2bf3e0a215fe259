"""A circuit's input signals (names and sizes) and the check of an input against them.

The witness calculator knows its inputs only by the FNV hash of their names. With circom's
`.sym` file (`labelIdx,varIdx,componentIdx,name` per signal) the names are known: every
top-level `main.*` name, indices stripped, whose hash the wasm answers with a size is an input,
and `validate_inputs` checks an input against that list. Without a `.sym` the wasm itself is
asked, as snarkjs's witness calculator does (`validate_with_calculator`): an unknown name or a
wrong size is named; missing inputs are counted (their names are not known). Both apply the
calculator's value rules (`inputs.flatten_inputs`), so an input accepted at the door cannot
fail later for its form, only for the circuit's own assertions.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpu_engine.circom.inputs import WitnessError, WitnessInputError, flatten_inputs
from gpu_engine.circom.sandbox import WasmBounds
from gpu_engine.circom.witness import WitnessCalculator, calculator_for

_TRAILING_INDEX = re.compile(r"(\[\d+\])+$")
MAX_SYM_BYTES = 256 << 20


def default_sym_path(wasm_path: str | Path) -> Path:
    """Where circom writes the .sym beside a wasm: out/NAME.sym for out/NAME_js/NAME.wasm."""
    wasm = Path(wasm_path)
    return wasm.parent.parent / f"{wasm.stem}.sym"


def _candidate_names(sym_path: Path) -> list[str]:
    """Top-level signal names in wire order, array indices stripped, each once."""
    if sym_path.stat().st_size > MAX_SYM_BYTES:
        raise WitnessError(f"{sym_path.name}: larger than {MAX_SYM_BYTES >> 20} MiB, not a circom .sym file")
    names: dict[str, None] = {}
    with open(sym_path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip("\n").split(",", 3)
            if len(parts) != 4 or not all(p.lstrip("-").isdigit() for p in parts[:3]):
                if not line.strip():
                    continue
                raise WitnessError(f"{sym_path.name} line {lineno}: not a circom .sym line "
                                   "(labelIdx,varIdx,componentIdx,name)")
            full = parts[3]
            if not full.startswith("main."):
                continue
            names.setdefault(_TRAILING_INDEX.sub("", full[len("main."):]), None)
    return list(names)


def input_signals(wasm_path: str | Path, sym_path: str | Path | None = None,
                  bounds: WasmBounds | None = None) -> dict[str, int]:
    """{input signal name: number of field elements}, in the circuit's wire order.

    `sym_path` defaults to circom's layout (`default_sym_path`). Raises WitnessError when the
    .sym is missing or does not describe this wasm's inputs."""
    calc = calculator_for(wasm_path, bounds)
    sym = Path(sym_path) if sym_path is not None else default_sym_path(wasm_path)
    if not sym.is_file():
        raise WitnessError(f"the circuit's input names need its .sym file (circom --sym); none at {sym}")
    return signals_of(calc, sym)


def signals_of(calc: WitnessCalculator, sym_path: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for name in _candidate_names(sym_path):
        size = calc.input_signal_size(name)
        if size > 0:
            found[name] = size
    total = sum(found.values())
    if total != calc.input_size:
        raise WitnessError(f"{sym_path.name} names {total} input values but the witness calculator takes "
                           f"{calc.input_size}: the .sym and .wasm are not from the same compilation")
    return found


def validate_inputs(signals: Mapping[str, int], inputs: Any, prime: int) -> dict[str, list[int]]:
    """The input flattened and reduced, or WitnessInputError naming the signal at fault
    (unknown, missing, wrong number of values, not a number)."""
    flat = flatten_inputs(inputs, prime)
    for name, values in flat.items():
        size = signals.get(name)
        if size is None:
            known = ", ".join(signals) or "none"
            raise WitnessInputError(f"unknown input signal {name!r} (the circuit's inputs: {known})", signal=name)
        if len(values) != size:
            raise WitnessInputError(f"input signal {name!r} takes {size} value(s), got {len(values)}", signal=name)
    missing = [name for name in signals if name not in flat]
    if missing:
        raise WitnessInputError(f"missing input signal{'s' if len(missing) > 1 else ''} "
                                f"{', '.join(repr(m) for m in missing)}", signal=missing[0])
    return flat


def validate_with_calculator(calc: WitnessCalculator, inputs: Any) -> dict[str, list[int]]:
    """The input flattened and reduced, checked by asking the wasm itself (no .sym registered):
    an unknown signal or a wrong number of values is named; missing values are counted."""
    flat = flatten_inputs(inputs, calc.prime)
    for name, values in flat.items():
        size = calc.input_signal_size(name)
        if size == 0:
            raise WitnessInputError(f"unknown input signal {name!r} (the witness calculator has no input of that "
                                    "name)", signal=name)
        if len(values) != size:
            raise WitnessInputError(f"input signal {name!r} takes {size} value(s), got {len(values)}", signal=name)
    given = sum(len(v) for v in flat.values())
    if given < calc.input_size:
        raise WitnessInputError(f"missing input signals: the circuit takes {calc.input_size} input values, these "
                                f"signals give {given} (registered without its .sym, so the missing names are not "
                                "known here)")
    return flat
