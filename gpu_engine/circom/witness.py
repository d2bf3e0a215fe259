"""circom's witness calculator (the generated .wasm) run in wasmtime, without node.

The wasm asks its host for four imports (`runtime.exceptionHandler`, `printErrorMessage`,
`writeBufferMessage`, `showSharedRWMemory`) and exchanges field elements through a small
shared window: the host writes a value's 32-bit words with `writeSharedRWMemory` and calls
`setInputSignal(hash_msb, hash_lsb, index)`, the signal named by the 64-bit FNV-1a hash of
its name; after the last input it computes every wire, and `getWitness(i)` puts wire i in
the window. This module does what circom's witness_calculator.js and snarkjs's
`wtns calculate` do, with the same input rules and byte for byte the same .wtns file.

Pure Python and no Django: it runs in the synthesis pool's children. A compiled module is
kept per wasm file (compiling is the slow part); each calculation gets a fresh instance, so
a failed one leaves nothing behind and threads never share a store.
"""
from __future__ import annotations

import atexit
import hashlib
import struct
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpu_engine.circom import sandbox
from gpu_engine.circom.inputs import WitnessError, WitnessInputError, flatten_inputs
from gpu_engine.circom.sandbox import WasmBounds, WitnessLimitError

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK64 = (1 << 64) - 1
# circom's exceptionHandler codes (witness_calculator.js, circom 2.1).
ERROR_CODES = {
    1: "Signal not found.",
    2: "Too many signals set.",
    3: "Signal already set.",
    4: "Assert Failed.",
    5: "Not enough memory.",
    6: "Input signal array access exceeds the size.",
    7: "Out of bounds array access.",
}
REQUIRED_EXPORTS = ("memory", "getVersion", "getFieldNumLen32", "getRawPrime", "readSharedRWMemory",
                    "writeSharedRWMemory", "init", "setInputSignal", "getInputSignalSize", "getInputSize",
                    "getWitnessSize", "getWitness", "getMessageChar", "getSharedRWMemoryStart")

__all__ = ["WasmBounds", "WitnessCalculator", "WitnessError", "WitnessInputError", "WitnessAssertionError",
           "WitnessLimitError",
           "calculate_witness", "fnv64", "wtns_bytes"]


class WitnessAssertionError(WitnessError):
    """The input does not satisfy the circuit: circom's own message (template and line)."""

    def __init__(self, message: str, *, code: int = 4) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class _CircomTrap(Exception):
    """Raised by the host's exceptionHandler to unwind out of the wasm."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def fnv64(name: str) -> int:
    """64-bit FNV-1a over the name's UTF-16 code units, as circom's JS (`charCodeAt`) hashes it."""
    h = FNV_OFFSET
    units = name.encode("utf-16-le")
    for i in range(0, len(units), 2):
        h = ((h ^ (units[i] | units[i + 1] << 8)) * FNV_PRIME) & MASK64
    return h


def _split_hash(name: str) -> tuple[int, int]:
    h = fnv64(name)
    return h >> 32, h & 0xFFFFFFFF


_modules: dict[tuple[int, str], Any] = {}
_modules_lock = threading.Lock()
MAX_LOG_LINES = 1000


def _wasmtime():
    return sandbox.wasmtime_module()


def _compiled(code: bytes) -> Any:
    """The wasmtime Module for this wasm, compiled once per process (by the sandbox's engine)."""
    wasmtime = _wasmtime()
    engine = sandbox.engine()
    key = (id(engine), hashlib.sha256(code).hexdigest())
    with _modules_lock:
        module = _modules.get(key)
        if module is None:
            try:
                module = wasmtime.Module(engine, code)
            except wasmtime.WasmtimeError as exc:
                lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip() and ln.strip() != "Caused by:"]
                raise WitnessError(f"not a WebAssembly module this engine runs: {'; '.join(lines[:3])}") from exc
            exports = {e.name for e in module.exports}
            missing = [name for name in REQUIRED_EXPORTS if name not in exports]
            if missing:
                raise WitnessError("not a circom 2 witness calculator (the wasm lacks "
                                   f"{', '.join(missing)}); compile the circuit with circom 2.1 or later, --wasm")
            _modules[key] = module
        return module


class _Instance:
    """One instantiation in a bounded store: the exports, the shared window, the messages collected."""

    def __init__(self, module: Any, bounds: WasmBounds) -> None:
        wasmtime = _wasmtime()
        self.bounds = bounds
        self.store = sandbox.new_store(bounds)
        self.errors: list[str] = []
        self.logs: list[str] = []
        self._line: list[str] = []
        i32 = wasmtime.ValType.i32()
        hosts = {
            "exceptionHandler": (wasmtime.FuncType([i32], []), self._exception),
            "printErrorMessage": (wasmtime.FuncType([], []), self._error_message),
            "writeBufferMessage": (wasmtime.FuncType([], []), self._buffer_message),
            "showSharedRWMemory": (wasmtime.FuncType([], []), lambda: self._line.append(str(self.read_value()))),
        }
        imports = []
        for imp in module.imports:
            if imp.module != "runtime" or imp.name not in hosts:
                raise WitnessError(f"the witness calculator imports {imp.module}.{imp.name}, "
                                   "which circom's runtime does not provide")
            ftype, fn = hosts[imp.name]
            imports.append(wasmtime.Func(self.store, ftype, fn))
        try:
            self.instance = wasmtime.Instance(self.store, module, imports)
            ex = self.instance.exports(self.store)
            self.fn = {name: ex[name] for name in REQUIRED_EXPORTS if name != "memory"}
            self.memory = ex["memory"]
            self.n32 = self.call("getFieldNumLen32")
            self.window = self.call("getSharedRWMemoryStart")
            self.call("getRawPrime")
            self.prime = self.read_value()
        except wasmtime.WasmtimeError as exc:
            if sandbox.is_memory_refusal(exc):
                raise WitnessLimitError(bounds.memory_message(str(exc).splitlines()[0]), bound="memory") from None
            raise WitnessError(f"the witness calculator cannot start: {str(exc).splitlines()[0]}") from None
        except (wasmtime.Trap, _CircomTrap) as exc:
            raise _failure(self, exc) from None

    def call(self, name: str, *args: int) -> Any:
        return self.fn[name](self.store, *args)

    def _exception(self, code: int) -> None:
        raise _CircomTrap(code)

    def _message(self) -> str:
        """circom's message, a char per call; a message that never ends is cut (the deadline holds too)."""
        chars: list[str] = []
        while (c := self.call("getMessageChar")) != 0:
            if len(chars) >= sandbox.MAX_MESSAGE_CHARS:
                chars.append(" [cut]")
                break
            chars.append(chr(c & 0x10FFFF))
        return "".join(chars)

    def _error_message(self) -> None:
        if len(self.errors) < MAX_LOG_LINES:
            self.errors.append(self._message())

    def _buffer_message(self) -> None:
        """circom's log(): pieces until a lone newline ends the line."""
        msg = self._message()
        if msg == "\n":
            if len(self.logs) < MAX_LOG_LINES:
                self.logs.append(" ".join(self._line))
            self._line = []
        elif len(self._line) < MAX_LOG_LINES:
            self._line.append(msg)

    def memory_bytes(self) -> int:
        try:
            return int(self.memory.data_len(self.store))
        except Exception:  # noqa: BLE001 - only for a message; a dead store has no size
            return 0

    def read_value(self) -> int:
        raw = self.memory.read(self.store, self.window, self.window + 4 * self.n32)
        return int.from_bytes(raw, "little")

    def read_raw(self) -> bytes:
        return bytes(self.memory.read(self.store, self.window, self.window + 4 * self.n32))

    def write_value(self, value: int) -> None:
        self.memory.write(self.store, value.to_bytes(4 * self.n32, "little"), self.window)


def _failure(inst: _Instance, exc: BaseException) -> WitnessError:
    """What a trap or circom exception means, with the bound it broke when it broke one."""
    code = getattr(exc, "code", None)
    if code is None and isinstance(exc.__cause__, _CircomTrap):
        code = exc.__cause__.code
    if code is None:
        inner = getattr(exc, "__context__", None)
        code = getattr(inner, "code", None)
    if code is None and sandbox.is_interrupt(exc):
        return WitnessLimitError(inst.bounds.timeout_message(), bound="time")
    detail = "".join(f"{line}\n" for line in inst.errors).strip()
    if code is None:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        used = inst.memory_bytes() / (1 << 20)
        return WitnessError(f"the witness calculator trapped: {text} (memory {used:.1f} MiB of its "
                            f"{inst.bounds.memory_bytes / (1 << 20):g} MiB limit)")
    if code == 5:  # circom's "Not enough memory.": its allocation was refused by the store's limit
        return WitnessLimitError(inst.bounds.memory_message(f"{ERROR_CODES[5]} {detail}".strip()), bound="memory")
    reason = ERROR_CODES.get(code, f"Unknown error (code {code}).")
    message = f"{reason} {detail}".strip()
    if code == 4:
        return WitnessAssertionError(message, code=code)
    return WitnessInputError(message) if code in (1, 2, 3, 6) else WitnessError(message)


class WitnessCalculator:
    """A circuit's witness calculator; `calculate(inputs)` per witness (thread-safe).

    Every call into the wasm runs in a store held to `bounds` (sandbox.py): a deadline per
    calculation (and per question to the probe instance) and a memory ceiling."""

    def __init__(self, wasm: bytes | str | Path, bounds: WasmBounds | None = None) -> None:
        code = Path(wasm).read_bytes() if isinstance(wasm, (str, Path)) else bytes(wasm)
        self.bounds = bounds or WasmBounds()
        self.module = _compiled(code)
        probe = _Instance(self.module, self.bounds)
        self._probe = probe
        self._probe_lock = threading.Lock()
        self.version = self._ask("getVersion")
        self.n32 = probe.n32
        self.prime = probe.prime
        self.witness_size = self._ask("getWitnessSize")
        self.input_size = self._ask("getInputSize")

    def _ask(self, name: str, *args: int) -> int:
        """One question to the long-lived probe instance, its deadline restarted for it."""
        wasmtime = _wasmtime()
        with self._probe_lock:
            sandbox.arm(self._probe.store, self.bounds)
            try:
                return int(self._probe.call(name, *args))
            except (wasmtime.Trap, _CircomTrap) as exc:
                raise _failure(self._probe, exc) from None

    def input_signal_size(self, name: str) -> int:
        """Number of field elements of input signal `name`; 0 when it is not an input."""
        return max(0, self._ask("getInputSignalSize", *_split_hash(name)))

    def _run(self, inputs: Mapping[str, Any]) -> _Instance:
        flat = flatten_inputs(inputs, self.prime)
        inst = _Instance(self.module, self.bounds)
        sandbox.arm(inst.store, self.bounds)  # the deadline covers the whole calculation from here
        wasmtime = _wasmtime()
        try:
            inst.call("init", 0)
            count = 0
            for name, values in flat.items():
                msb, lsb = _split_hash(name)
                size = inst.call("getInputSignalSize", msb, lsb)
                if size <= 0:  # circom answers 0 (older runtimes -1) for a name not among the inputs
                    raise WitnessInputError(f"unknown input signal {name!r}", signal=name)
                if len(values) != size:
                    raise WitnessInputError(f"input signal {name!r} takes {size} value(s), got {len(values)}",
                                            signal=name)
                for i, value in enumerate(values):
                    inst.write_value(value)
                    inst.call("setInputSignal", msb, lsb, i)
                    count += 1
            if count < self.input_size:
                raise WitnessInputError(f"only {count} of the circuit's {self.input_size} input values were given")
        except (wasmtime.Trap, _CircomTrap) as exc:
            raise _failure(inst, exc) from None
        return inst

    def _witness_bytes(self, inst: _Instance) -> bytes:
        """Every wire's n32 words, concatenated: one getWitness call and one read per wire."""
        wasmtime = _wasmtime()
        fast = _raw_reader(inst)
        try:
            if fast is not None:
                return fast(self.witness_size)
            get = inst.fn["getWitness"]
            parts = []
            for i in range(self.witness_size):
                get(inst.store, i)
                parts.append(inst.read_raw())
            return b"".join(parts)
        except (wasmtime.Trap, _CircomTrap) as exc:
            raise _failure(inst, exc) from None

    def calculate(self, inputs: Mapping[str, Any]) -> list[int]:
        """The witness (wire 0 = 1, outputs, public inputs, private inputs, internal) as ints."""
        raw = self._witness_bytes(self._run(inputs))
        n8 = 4 * self.n32
        return [int.from_bytes(raw[i:i + n8], "little") for i in range(0, len(raw), n8)]

    def calculate_wtns(self, inputs: Mapping[str, Any]) -> bytes:
        """The witness as a .wtns file, byte for byte what `snarkjs wtns calculate` writes."""
        raw = self._witness_bytes(self._run(inputs))
        return _wtns_header(self.n32, self.prime, self.witness_size) + raw


def _raw_reader(inst: _Instance):
    """A loop over getWitness through wasmtime's unchecked call and a raw view of the memory.

    wasmtime-py's checked call costs tens of microseconds (it rebuilds the function type each
    time), which at 2^16 wires is seconds; this path is ~10x cheaper. It uses the package's
    ffi module (pinned to one major version in pyproject); None when that is not available, and
    the caller takes the public path."""
    try:
        import ctypes

        import wasmtime
        from wasmtime import _ffi as ffi

        func = inst.fn["getWitness"]
        ctx = inst.store._context()  # noqa: SLF001 - wasmtime's unchecked call path (see the docstring)
        fn_ref = ctypes.byref(func._func)  # noqa: SLF001 - wasmtime's unchecked call path (see the docstring)
        call = ffi.wasmtime_func_call_unchecked
        args = (ffi.wasmtime_val_raw_t * 1)()
        trap = ctypes.POINTER(ffi.wasm_trap_t)()
        trap_ref = ctypes.byref(trap)
    except (ImportError, AttributeError):
        return None
    window, width = inst.window, 4 * inst.n32

    def read(count: int) -> bytes:
        base = ctypes.addressof(inst.memory.data_ptr(inst.store).contents)  # no growth from here on
        out = bytearray(count * width)
        for i in range(count):
            args[0].i32 = i
            error = call(ctx, fn_ref, args, 1, trap_ref)
            if trap:
                raise wasmtime.Trap._from_ptr(trap)  # noqa: SLF001 - the trap the raw C call returned; no public constructor
            if error:
                raise WitnessError(f"the witness calculator failed reading wire {i}")
            out[i * width:(i + 1) * width] = ctypes.string_at(base + window, width)
        return bytes(out)

    return read


def _wtns_header(n32: int, prime: int, count: int) -> bytes:
    n8 = 4 * n32
    return (b"wtns" + struct.pack("<II", 2, 2)
            + struct.pack("<IQ", 1, 8 + n8) + struct.pack("<I", n8) + prime.to_bytes(n8, "little")
            + struct.pack("<I", count)
            + struct.pack("<IQ", 2, n8 * count))


def wtns_bytes(values: list[int], prime: int, n8: int = 32) -> bytes:
    """A .wtns (version 2) holding `values`, canonical little-endian."""
    return _wtns_header(n8 // 4, prime, len(values)) + b"".join(v.to_bytes(n8, "little") for v in values)


_calculators: dict[tuple[str, int, int, WasmBounds], WitnessCalculator] = {}
_calculators_lock = threading.Lock()


def calculator_for(wasm_path: str | Path, bounds: WasmBounds | None = None) -> WitnessCalculator:
    """A process-wide calculator per wasm file and bounds (rebuilt when the file changes)."""
    path = Path(wasm_path)
    bounds = bounds or WasmBounds()
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, bounds)
    with _calculators_lock:
        calc = _calculators.get(key)
    if calc is None:
        calc = WitnessCalculator(path, bounds)
        with _calculators_lock:
            _calculators[key] = calc
    return calc


@atexit.register
def _drop_cached() -> None:
    """Free wasmtime objects before interpreter teardown (their finalizers need the library)."""
    with _calculators_lock:
        _calculators.clear()
    with _modules_lock:
        _modules.clear()


def calculate_witness(wasm_path: str | Path, inputs: Mapping[str, Any], bounds: WasmBounds | None = None) -> list[int]:
    """The witness of `inputs` as ints (see WitnessCalculator.calculate), within `bounds`."""
    return calculator_for(wasm_path, bounds).calculate(inputs)
