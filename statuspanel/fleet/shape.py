"""Typed reads of a foreign JSON document: one rule set for what a field may be, with its path named.

A remote engine's document is untrusted. Readers ask for a field with the types it may have; a
missing field (or `null`) gives the default, a field of the wrong type raises `Malformed` naming
its path (`pipelines[0].partitions[3].gpu_ms`), which makes the source `malformed` with that reason.
Booleans are never numbers here, although Python's `bool` is an `int`.
"""
from __future__ import annotations

from typing import Any, overload

import numpy as np

# The JSON type names used in messages.
_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number",
          bool: "a boolean"}


class Malformed(ValueError):
    """The document is no valid status snapshot; `reason` is one of MALFORMED_REASONS."""

    def __init__(self, message: str, *, field: str | None = None, reason: str = "shape") -> None:
        super().__init__(message)
        self.field = field
        self.reason = reason


def _type_ok(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in types
    if isinstance(value, int) and float in types:
        return True
    return isinstance(value, types)


def _describe(types: tuple[type, ...]) -> str:
    return " or ".join(_NAMES.get(t, t.__name__) for t in types)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    for t in (bool, dict, list, str, int, float):
        if isinstance(value, t):
            return _NAMES[t]
    return type(value).__name__


def field(obj: dict[str, Any], key: str, types: tuple[type, ...], path: str, *, required: bool = False,
          default: Any = None) -> Any:
    """`obj[key]` when it has one of `types`; `default` when missing or null (unless required)."""
    where = f"{path}.{key}" if path else key
    value = obj.get(key)
    if value is None:
        if required:
            raise Malformed(f"{where} is missing", field=where)
        return default
    if not _type_ok(value, types):
        raise Malformed(f"{where} must be {_describe(types)}, got {_json_type(value)}", field=where)
    return value


@overload
def number(obj: dict[str, Any], key: str, path: str, *, default: float, required: bool = False) -> float: ...
@overload
def number(obj: dict[str, Any], key: str, path: str, *, default: None = None,
           required: bool = False) -> float | None: ...
def number(obj: dict[str, Any], key: str, path: str, *, default: float | None = None,
           required: bool = False) -> float | None:
    """A JSON number that is finite and not negative (durations, bytes, counts); never None with a
    default (an int stays an int: a float is the type that admits both)."""
    value: float | None = field(obj, key, (int, float), path, required=required, default=default)
    if value is not None and value is not default and not (0 <= value < float("inf")):
        where = f"{path}.{key}" if path else key
        raise Malformed(f"{where} must be a non-negative number, got {value!r}", field=where)
    return value


@overload
def integer(obj: dict[str, Any], key: str, path: str, *, default: int, required: bool = False) -> int: ...
@overload
def integer(obj: dict[str, Any], key: str, path: str, *, default: None = None,
            required: bool = False) -> int | None: ...
def integer(obj: dict[str, Any], key: str, path: str, *, default: int | None = None,
            required: bool = False) -> int | None:
    """A JSON integer that is not negative; never None with a default."""
    value: int | None = field(obj, key, (int,), path, required=required, default=default)
    if value is not None and value is not default and value < 0:
        where = f"{path}.{key}" if path else key
        raise Malformed(f"{where} must be a non-negative integer, got {value!r}", field=where)
    return value


def objects(obj: dict[str, Any], key: str, path: str) -> list[tuple[str, dict[str, Any]]]:
    """A list of objects as (path of the entry, entry); missing or null is empty."""
    items = field(obj, key, (list,), path, default=[])
    where = f"{path}.{key}" if path else key
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise Malformed(f"{where}[{i}] must be an object, got {_json_type(item)}", field=f"{where}[{i}]")
        out.append((f"{where}[{i}]", item))
    return out


def section(obj: dict[str, Any], key: str, path: str = "") -> dict[str, Any]:
    """A nested object; missing or null is empty."""
    value: dict[str, Any] = field(obj, key, (dict,), path, default={})
    return value


def count_map(obj: dict[str, Any], key: str, path: str) -> dict[str, int]:
    """An object of name -> non-negative integer (counters by kind, buffer counters)."""
    raw = section(obj, key, path)
    where = f"{path}.{key}" if path else key
    return {name: integer(raw, name, where, default=0) for name in raw}


def nesting_depth(body: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest, read from its bytes before parsing.

    `json.loads` recurses in C once per level: past the interpreter's recursion limit it raises,
    but in a process whose limit was raised (some libraries raise it on import) a deep enough text
    overflows the thread's stack and kills the process. So the depth is measured first, in one
    vectorised pass: brackets inside strings (after an unescaped quote) do not count. Where the
    text is not JSON the count may be off, but only past the point where the parser stops anyway."""
    if body.count(b"[") + body.count(b"{") == 0:
        return 0
    data = np.frombuffer(body, dtype=np.uint8)
    positions = np.arange(data.size, dtype=np.int32)
    backslash = data == 0x5C
    last_plain = np.maximum.accumulate(np.where(backslash, -1, positions))
    run_before = np.zeros(data.size, dtype=np.int32)  # backslashes just before each byte
    run_before[1:] = positions[:-1] - last_plain[:-1]
    quote = (data == 0x22) & (run_before % 2 == 0)
    in_string = (np.cumsum(quote, dtype=np.int32) & 1).astype(bool)
    opens = ((data == 0x5B) | (data == 0x7B)) & ~in_string
    closes = ((data == 0x5D) | (data == 0x7D)) & ~in_string
    depth = np.cumsum(opens.astype(np.int32) - closes.astype(np.int32), dtype=np.int32)
    return int(depth.max(initial=0))
