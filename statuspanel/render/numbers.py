"""One reading of a number from a snapshot: foreign engines send anything, and a bool is not a count."""
from __future__ import annotations

from typing import Any


def num(value: Any) -> float | None:
    """`value` as a float when it is a real number (not a bool), else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
