"""The proving engine: durable queue -> synthesis (process pool) -> GPU workers -> finalizers -> assembler.

`Engine` (core.py) wires the parts; each module owns one of them (see core.py's docstring).

The names below are loaded on first use: pool children import `gpu_engine.engine.proving` and
`gpu_engine.engine.pools`, which are pure, and must not pull in Django through this package.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpu_engine.engine.config import EngineConfig
    from gpu_engine.engine.core import Engine
    from gpu_engine.engine.workers import ProofError

__all__ = ["Engine", "EngineConfig", "ProofError"]

_HOMES = {"Engine": "core", "EngineConfig": "config", "ProofError": "workers"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
