"""Hand-written witness calculators that misbehave, for the tests of the wasm box (sandbox.py).

Each module has circom 2's exports and imports (so it passes as a witness calculator) and the
BLS12-381 scalar field's prime; one of its functions misbehaves: `init` loops forever, `init`
asks for 1 GiB, `getRawPrime` prints error messages forever (each one endless). Compiled from
WAT with wasmtime's own `wat2wasm`.
"""
from __future__ import annotations

from pathlib import Path

import wasmtime

from gpu_engine.groth16.field import R

WINDOW = 0          # the shared window (8 words)
PRIME_AT = 1024     # the prime's bytes, copied into the window by getRawPrime
ONE_GIB_PAGES = 16384

INIT_LOOPS = "(loop $spin (br $spin))"
INIT_GROWS = (f"(if (i32.eq (memory.grow (i32.const {ONE_GIB_PAGES})) (i32.const -1)) "
              "(then (call $exc (i32.const 5))))")
RAW_PRIME = f"(memory.copy (i32.const {WINDOW}) (i32.const {PRIME_AT}) (i32.const 32))"
PRIME_PRINTS_FOREVER = "(loop $again (call $perr) (br $again))"
MESSAGE_NEVER_ENDS = "(i32.const 65)"


def _data(value: int) -> str:
    return "".join(f"\\{b:02x}" for b in value.to_bytes(32, "little"))


def calculator_wat(*, wires: int, inputs: int = 2, init: str = "", raw_prime: str = RAW_PRIME,
                   message_char: str = "(i32.const 0)", memory: str = "1") -> str:
    """A circom-like witness calculator: every input name has size 1, `inputs` values in all,
    `wires` wires (wire 0 is 1, the others 0)."""
    return f"""
(module
  (import "runtime" "exceptionHandler" (func $exc (param i32)))
  (import "runtime" "printErrorMessage" (func $perr))
  (memory (export "memory") {memory})
  (data (i32.const {PRIME_AT}) "{_data(R)}")
  (func (export "getVersion") (result i32) (i32.const 2))
  (func (export "getFieldNumLen32") (result i32) (i32.const 8))
  (func (export "getRawPrime") {raw_prime})
  (func (export "getSharedRWMemoryStart") (result i32) (i32.const {WINDOW}))
  (func (export "readSharedRWMemory") (param i32) (result i32)
    (i32.load (i32.add (i32.const {WINDOW}) (i32.shl (local.get 0) (i32.const 2)))))
  (func (export "writeSharedRWMemory") (param i32 i32)
    (i32.store (i32.add (i32.const {WINDOW}) (i32.shl (local.get 0) (i32.const 2))) (local.get 1)))
  (func (export "init") (param i32) {init})
  (func (export "setInputSignal") (param i32 i32 i32))
  (func (export "getInputSignalSize") (param i32 i32) (result i32) (i32.const 1))
  (func (export "getInputSize") (result i32) (i32.const {inputs}))
  (func (export "getWitnessSize") (result i32) (i32.const {wires}))
  (func (export "getWitness") (param i32)
    (memory.fill (i32.const {WINDOW}) (i32.const 0) (i32.const 32))
    (if (i32.eqz (local.get 0)) (then (i32.store8 (i32.const {WINDOW}) (i32.const 1)))))
  (func (export "getMessageChar") (result i32) {message_char})
)
"""


def write(path: Path, wat: str) -> Path:
    path.write_bytes(wasmtime.wat2wasm(wat))
    return path


def looping(path: Path, wires: int) -> Path:
    """`init` never returns."""
    return write(path, calculator_wat(wires=wires, init=INIT_LOOPS))


def memory_hungry(path: Path, wires: int) -> Path:
    """`init` grows the memory by 1 GiB (circom's "Not enough memory." when refused)."""
    return write(path, calculator_wat(wires=wires, init=INIT_GROWS))


def endless_messages(path: Path, wires: int) -> Path:
    """`getRawPrime` prints error messages forever, each message endless."""
    return write(path, calculator_wat(wires=wires, raw_prime=PRIME_PRINTS_FOREVER, message_char=MESSAGE_NEVER_ENDS))


def memory64(path: Path) -> Path:
    """A memory64 module: its memory is not held to 4 GiB by its index type (refused when compiled)."""
    return write(path, '(module (memory (export "memory") i64 1))')


def well_behaved(path: Path, wires: int) -> Path:
    """The same calculator without misbehaviour: proves the box lets honest work through."""
    return write(path, calculator_wat(wires=wires))
