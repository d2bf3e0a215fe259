"""One rule set for a circom circuit's input (a JSON object of signals), wherever it arrives.

The rules are those of circom's witness_calculator.js and snarkjs: a value is an integer or a
string of one (decimal, optionally negative, or 0x / 0o / 0b), reduced modulo the field's
prime; an array signal takes a (nested) list, flattened in order; an object nests names with
dots (circom's buses). Anything else is refused here with the signal's name, before the wasm
runs. `signals.validate_inputs` (submission) and the witness calculator both call this.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

MAX_DIGITS = 200  # a field element has 78 decimal digits; longer strings are refused unparsed
_DECIMAL = re.compile(r"-?[0-9]+")
_PREFIXED = re.compile(r"0([xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")


class WitnessError(ValueError):
    """The witness could not be computed (bad input, a failed assertion, a bad wasm)."""


class WitnessInputError(WitnessError):
    """The input does not fit the circuit's signals; `signal` names the one at fault."""

    def __init__(self, message: str, *, signal: str | None = None) -> None:
        super().__init__(message)
        self.signal = signal


def parse_value(value: Any, signal: str, prime: int) -> int:
    """One field element from a JSON value, reduced modulo `prime` (negative values wrap)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        kind = "a boolean" if isinstance(value, bool) else type(value).__name__
        hint = " (write large or fractional-looking numbers as decimal strings)" if isinstance(value, float) else ""
        raise WitnessInputError(f"input signal {signal!r}: {kind} is not an integer{hint}", signal=signal)
    if isinstance(value, str):
        text = value.strip()
        if len(text) > MAX_DIGITS:
            raise WitnessInputError(f"input signal {signal!r}: a value of {len(text)} characters is too long "
                                    "for a field element", signal=signal)
        if _DECIMAL.fullmatch(text):
            value = int(text, 10)
        elif _PREFIXED.fullmatch(text):
            value = int(text, 0)
        else:
            shown = text if len(text) <= 40 else text[:37] + "..."
            raise WitnessInputError(f"input signal {signal!r}: {shown!r} is not a number", signal=signal)
    return value % prime


def _flat_values(value: Any, signal: str, prime: int, out: list[int]) -> None:
    if isinstance(value, (list, tuple)):
        for item in value:
            _flat_values(item, signal, prime, out)
    else:
        out.append(parse_value(value, signal, prime))


def _is_object_list(value: Sequence[Any]) -> bool:
    """A list whose leaves are objects (an array of buses), as circom's qualify_input decides."""
    first = value
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    return isinstance(first, Mapping)


def _qualify(prefix: str, value: Any, prime: int, out: dict[str, list[int]]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                raise WitnessInputError(f"input signal names must be non-empty strings, got {key!r}")
            _qualify(f"{prefix}.{key}" if prefix else key, item, prime, out)
    elif isinstance(value, (list, tuple)) and value and _is_object_list(value):
        for i, item in enumerate(value):
            if not isinstance(item, (Mapping, list, tuple)):
                raise WitnessInputError(f"input signal {prefix!r}: mixes objects and values", signal=prefix)
            _qualify(f"{prefix}[{i}]", item, prime, out)
    else:
        values: list[int] = []
        _flat_values(value, prefix, prime, values)
        if prefix in out:
            raise WitnessInputError(f"input signal {prefix!r} is given twice", signal=prefix)
        out[prefix] = values


def flatten_inputs(inputs: Any, prime: int) -> dict[str, list[int]]:
    """{signal name: its values in order}, every value checked and reduced modulo `prime`."""
    if not isinstance(inputs, Mapping):
        raise WitnessInputError(f"a circuit input is a JSON object of signals, got {type(inputs).__name__}")
    out: dict[str, list[int]] = {}
    _qualify("", inputs, prime, out)
    return out
