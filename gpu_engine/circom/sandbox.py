"""The box every circom witness calculator runs in: a wall-clock deadline and a memory ceiling.

A circuit's wasm is code from its author. Without bounds, wasmtime runs it forever (an endless
loop in `init` pins a synthesis process, and a SIGTERM waits for it) and grants it any memory
(memory64 modules are not even held to 4 GiB). Here every store gets:

- an epoch deadline: one process-wide ticker thread advances the engine's epoch every TICK_SECS,
  and a store armed with `arm(store, bounds)` traps once `bounds.deadline_secs` have passed;
- a memory limit (`Store.set_limits`): instantiation of a module that declares more fails, and a
  `memory.grow` past it returns -1 to the wasm;
- no memory64, threads or shared memory (the engine's config refuses such modules at compile).

A run that breaks a bound ends in `WitnessLimitError` naming the bound and its setting; the store
is dropped and the process carries on. Pure Python, no Django: it runs in the synthesis pool.
"""
from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from gpu_engine.circom.inputs import WitnessError

TICK_SECS = 0.05
WASM_PAGE = 65536
DEFAULT_DEADLINE_SECS = 60.0
DEFAULT_MEMORY_BYTES = 2 << 30
# Host-side text a calculator may hand us (circom's error and log messages), per message.
MAX_MESSAGE_CHARS = 4096


class WitnessLimitError(WitnessError):
    """The witness calculator broke one of its bounds (time or memory); `bound` says which."""

    def __init__(self, message: str, *, bound: str) -> None:
        super().__init__(message)
        self.bound = bound


@dataclass(frozen=True)
class WasmBounds:
    """The bounds of one wasm run: seconds of wall-clock time and bytes of linear memory."""

    deadline_secs: float = DEFAULT_DEADLINE_SECS
    memory_bytes: int = DEFAULT_MEMORY_BYTES

    def __post_init__(self) -> None:
        if not (self.deadline_secs > 0 and math.isfinite(self.deadline_secs)):
            raise ValueError(f"a witness deadline must be a positive number of seconds, got {self.deadline_secs!r}")
        if self.memory_bytes < WASM_PAGE:
            raise ValueError(f"a witness memory limit must be at least one wasm page ({WASM_PAGE} bytes), "
                             f"got {self.memory_bytes!r}")

    def ticks(self) -> int:
        return max(1, math.ceil(self.deadline_secs / TICK_SECS))

    def timeout_message(self) -> str:
        return (f"the witness calculator ran past its deadline of {self.deadline_secs:g} s "
                "(CIRCUIT_WITNESS_TIMEOUT)")

    def memory_message(self, detail: str = "") -> str:
        mib = self.memory_bytes / (1 << 20)
        return (f"the witness calculator needs more memory than its limit of {mib:g} MiB "
                f"(CIRCUIT_WITNESS_MEMORY){': ' + detail if detail else ''}")


_engine: Any = None
_engine_pid: int | None = None
_engine_lock = threading.Lock()


def wasmtime_module() -> Any:
    try:
        import wasmtime
    except ImportError as exc:  # a declared dependency; say so instead of a bare ImportError
        raise WitnessError(f"the witness calculator needs the wasmtime package ({exc})") from exc
    return wasmtime


def engine() -> Any:
    """This process's wasmtime Engine (epoch interruption on, memory64 off) and its ticker.

    Checked by pid: a process forked after the ticker started has no ticker thread of its own."""
    global _engine, _engine_pid
    with _engine_lock:
        if _engine is None or _engine_pid != os.getpid():
            wasmtime = wasmtime_module()
            config = wasmtime.Config()
            config.epoch_interruption = True
            config.wasm_memory64 = False
            config.wasm_threads = False
            config.shared_memory = False
            _engine = wasmtime.Engine(config)
            _engine_pid = os.getpid()
            threading.Thread(target=_tick, args=(_engine,), name="wasm-epoch", daemon=True).start()
        return _engine


def _tick(eng: Any) -> None:
    """Advance the epoch while this engine is the process's (a replaced one lets its ticker end)."""
    while _engine is eng:
        time.sleep(TICK_SECS)
        eng.increment_epoch()


def new_store(bounds: WasmBounds) -> Any:
    """A store held to `bounds.memory_bytes`, its deadline armed from now."""
    store = wasmtime_module().Store(engine())
    store.set_limits(memory_size=bounds.memory_bytes)
    arm(store, bounds)
    return store


def arm(store: Any, bounds: WasmBounds) -> None:
    """(Re)start the store's deadline: calls into it trap once `bounds.deadline_secs` have passed."""
    store.set_epoch_deadline(bounds.ticks())


def is_interrupt(exc: BaseException) -> bool:
    """A trap raised by the epoch deadline (wasmtime's INTERRUPT trap code)."""
    wasmtime = wasmtime_module()
    if isinstance(exc, wasmtime.Trap):
        return exc.trap_code == wasmtime.TrapCode.INTERRUPT
    return "interrupt" in str(exc).lower()


def is_memory_refusal(exc: BaseException) -> bool:
    """An instantiation refused for the memory limit (a module declaring more than it allows)."""
    text = str(exc).lower()
    return "memory" in text and ("limit" in text or "exceed" in text or "resource" in text)
