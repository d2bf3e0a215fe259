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
# Levels of arrays and objects within each other in one input (circom's arrays and buses need a few).
MAX_DEPTH = 32
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


def _too_deep(signal: str) -> WitnessInputError:
    shown = signal if len(signal) <= 60 else signal[:57] + "..."
    where = f" at input signal {shown!r}" if signal else ""
    return WitnessInputError(f"a circuit input is nested more than {MAX_DEPTH} levels deep{where} (arrays and "
                             "objects within each other)", signal=signal or None)


def _flat_values(value: Any, signal: str, prime: int, depth: int) -> list[int]:
    """A signal's values in order: nested lists flattened, iteratively (no recursion to exhaust)."""
    out: list[int] = []
    stack: list[tuple[Any, int]] = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (list, tuple)):
            if level >= MAX_DEPTH:
                raise _too_deep(signal)
            stack.extend((child, level + 1) for child in reversed(item))
        else:
            out.append(parse_value(item, signal, prime))
    return out


def _is_object_list(value: Sequence[Any]) -> bool:
    """A list whose leaves are objects (an array of buses), as circom's qualify_input decides."""
    first = value
    for _ in range(MAX_DEPTH + 1):
        if not (isinstance(first, (list, tuple)) and first):
            break
        first = first[0]
    return isinstance(first, Mapping)


def flatten_inputs(inputs: Any, prime: int) -> dict[str, list[int]]:
    """{signal name: its values in order}, every value checked and reduced modulo `prime`.

    The one walk of an input, at the door and in the witness calculator alike: iterative, and
    refusing nesting deeper than MAX_DEPTH with the signal's name (never a RecursionError)."""
    if not isinstance(inputs, Mapping):
        raise WitnessInputError(f"a circuit input is a JSON object of signals, got {type(inputs).__name__}")
    out: dict[str, list[int]] = {}
    stack: list[tuple[str, Any, int]] = [("", inputs, 0)]
    while stack:
        prefix, value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep(prefix)
        if isinstance(value, Mapping):
            children = []
            for key, item in value.items():
                if not isinstance(key, str) or not key:
                    raise WitnessInputError(f"input signal names must be non-empty strings, got {key!r}")
                children.append((f"{prefix}.{key}" if prefix else key, item, depth + 1))
            stack.extend(reversed(children))
        elif isinstance(value, (list, tuple)) and value and _is_object_list(value):
            for item in value:
                if not isinstance(item, (Mapping, list, tuple)):
                    raise WitnessInputError(f"input signal {prefix!r}: mixes objects and values", signal=prefix)
            stack.extend((f"{prefix}[{i}]", item, depth + 1) for i, item in reversed(list(enumerate(value))))
        else:
            values = _flat_values(value, prefix, prime, depth)
            if prefix in out:
                raise WitnessInputError(f"input signal {prefix!r} is given twice", signal=prefix)
            out[prefix] = values
    return out
