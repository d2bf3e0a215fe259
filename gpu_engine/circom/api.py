"""The circom entry points the engine's pools call: plain data in, plain data out, no Django.

A `CircuitRef` names what a child needs (the converted key, the wasm, the r1cs) by path; a child
loads each once and keeps it (`keycache.load_key`, `_r1cs`). Per partition: `synthesize` (the
synthesis pool: witness from a .wtns or from inputs through the wasm, constraints checked when
the r1cs is registered, row evaluations) -> `prove_device` -> `prove_finalize` ->
`verify_partition`, the same seam as `groth16.api`.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from gpu_engine.circom.keycache import load_key
from gpu_engine.circom.prover import CircuitKey, CircuitWitness, make_witness, prove_device
from gpu_engine.circom.r1cs import R1cs, UnsatisfiedWitness, check_rows, read_r1cs
from gpu_engine.circom.sandbox import DEFAULT_DEADLINE_SECS, DEFAULT_MEMORY_BYTES, WasmBounds
from gpu_engine.circom.wtns import read_wtns
from gpu_engine.groth16.prover import prove_finalize
from gpu_engine.groth16.verifier import verify_partition

__all__ = ["CircuitKey", "CircuitRef", "CircuitWitness", "InvalidWitness", "UnsatisfiedWitness", "load",
           "partition_bytes", "prove_device", "prove_finalize", "synthesize", "verify_partition"]

WTNS_SUFFIX, INPUT_SUFFIX = ".wtns", ".json"


@dataclass(frozen=True)
class CircuitRef:
    """A registered circuit as pool children see it: names and paths, nothing heavy."""

    name: str
    key_hash: str       # sha256 of the zkey (the converted key is checked against it)
    key_path: str       # the converted key next to the zkey
    wasm_path: str = ""  # the witness calculator, when registered
    r1cs_path: str = ""  # the constraints, when registered: witnesses are checked before proving
    witness_timeout: float = DEFAULT_DEADLINE_SECS  # the calculator's box (CIRCUIT_WITNESS_TIMEOUT)
    witness_memory: int = DEFAULT_MEMORY_BYTES      # and its memory (CIRCUIT_WITNESS_MEMORY)

    def witness_bounds(self) -> WasmBounds:
        return WasmBounds(self.witness_timeout, self.witness_memory)


def load(ref: CircuitRef) -> CircuitKey:
    return load_key(ref.key_path, ref.name, ref.key_hash)


_r1cs_cache: dict[str, R1cs] = {}
_r1cs_lock = threading.Lock()


def _r1cs(path: str) -> R1cs:
    with _r1cs_lock:
        found = _r1cs_cache.get(path)
        if found is None:
            found = _r1cs_cache[path] = read_r1cs(Path(path).read_bytes())
        return found


def witness_values(ref: CircuitRef, key: CircuitKey, item_path: str) -> list[int]:
    """The full witness of one partition from its stored item (.wtns, or inputs as .json)."""
    raw = Path(item_path).read_bytes()
    if item_path.endswith(WTNS_SUFFIX):
        return read_wtns(raw, expected_count=key.num_vars)
    if not ref.wasm_path:
        raise ValueError(f"circuit {ref.name} has no witness calculator (.wasm) registered")
    from gpu_engine.circom.witness import calculator_for

    calc = calculator_for(ref.wasm_path, ref.witness_bounds())
    if calc.witness_size != key.num_vars:  # asked before the host allocates a buffer of that many wires
        raise ValueError(f"the wasm makes {calc.witness_size} wires, the zkey of {ref.name} has {key.num_vars}")
    return calc.calculate(json.loads(raw))


class InvalidWitness(ValueError):
    """The partition's own witness or input is wrong (a circuit assertion, a broken constraint, a
    malformed file): retrying cannot help, so the engine fails the partition at once."""

    retriable = False


def synthesize(ref: CircuitRef, job_id: str, index: int, item_path: str) -> CircuitWitness:
    """The witness of partition `index`, checked against the constraints when the r1cs is known."""
    from gpu_engine.circom.binfile import CircomFormatError
    from gpu_engine.circom.inputs import WitnessError

    t0 = time.perf_counter()
    key = load(ref)
    try:
        values = witness_values(ref, key, item_path)
        witness = make_witness(key, job_id, index, values, 0.0)
        if ref.r1cs_path:
            check_rows(_r1cs(ref.r1cs_path), witness.a, witness.b, values)
    except (WitnessError, UnsatisfiedWitness, CircomFormatError) as exc:
        raise InvalidWitness(f"{type(exc).__name__}: {exc}") from None
    witness.synth_ms = (time.perf_counter() - t0) * 1000.0
    return witness


def partition_bytes(key: CircuitKey) -> int:
    """The memory-budget reservation of one partition (as `groth16.api.partition_bytes`: the
    domain-sized vectors of the six NTTs and the scalar vectors of the MSMs, plus slack)."""
    return 32 * (8 * key.domain_size + 4 * key.num_vars) + (1 << 20)
