"""Every witness calculator runs in a box: a wasm that loops is stopped at its deadline, one that asks
for 1 GiB is refused past its memory limit, a memory64 module is refused, and the process (and the
calculator's own probe) keeps working afterwards. No node needed: the calculators are hand-written."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from gpu_engine.circom.sandbox import WasmBounds
from gpu_engine.circom.witness import WitnessCalculator, WitnessError, WitnessLimitError
from tests.circom import hostile_wasm

WIRES = 5
BOUNDS = WasmBounds(deadline_secs=1.0, memory_bytes=64 << 20)
INPUT = {"a": "3", "b": "4"}


def _within(seconds: float, fn):
    """fn() in a thread; its result or exception, or a failure when it is still running after `seconds`
    (the unbounded calculator of old never came back)."""
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["result"]


def test_a_looping_init_is_stopped_at_its_deadline_and_the_process_carries_on(tmp_path: Path):
    calc = WitnessCalculator(hostile_wasm.looping(tmp_path / "loop.wasm", WIRES), BOUNDS)
    started = time.monotonic()
    with pytest.raises(WitnessLimitError) as err:
        _within(20, lambda: calc.calculate(INPUT))
    elapsed = time.monotonic() - started
    assert err.value.bound == "time"
    assert "deadline of 1 s" in str(err.value) and "CIRCUIT_WITNESS_TIMEOUT" in str(err.value)
    assert 0.9 <= elapsed < 10
    # the same calculator still answers, and an honest one in this process still calculates
    assert calc.input_signal_size("a") == 1
    honest = WitnessCalculator(hostile_wasm.well_behaved(tmp_path / "ok.wasm", WIRES), BOUNDS)
    assert honest.calculate(INPUT) == [1] + [0] * (WIRES - 1)


def test_a_1_gib_allocation_is_refused_past_the_memory_limit(tmp_path: Path):
    calc = WitnessCalculator(hostile_wasm.memory_hungry(tmp_path / "hungry.wasm", WIRES), BOUNDS)
    with pytest.raises(WitnessLimitError) as err:
        _within(20, lambda: calc.calculate(INPUT))
    assert err.value.bound == "memory"
    assert "limit of 64 MiB" in str(err.value) and "CIRCUIT_WITNESS_MEMORY" in str(err.value)
    # under a limit that allows it, the same calculator gets its gigabyte (the limit is what refused it)
    roomy = WitnessCalculator(tmp_path / "hungry.wasm", WasmBounds(deadline_secs=10, memory_bytes=2 << 30))
    assert roomy.calculate(INPUT)[0] == 1


def test_a_module_declaring_more_memory_than_the_limit_cannot_start(tmp_path: Path):
    wat = hostile_wasm.calculator_wat(wires=WIRES, memory=str(hostile_wasm.ONE_GIB_PAGES))
    with pytest.raises(WitnessLimitError) as err:
        WitnessCalculator(hostile_wasm.write(tmp_path / "big.wasm", wat), BOUNDS)
    assert err.value.bound == "memory" and "exceeds" in str(err.value)


def test_memory64_modules_are_refused(tmp_path: Path):
    with pytest.raises(WitnessError, match="memory64"):
        WitnessCalculator(hostile_wasm.memory64(tmp_path / "m64.wasm"), BOUNDS)


def test_endless_error_messages_end_at_the_deadline_with_bounded_text(tmp_path: Path):
    path = hostile_wasm.endless_messages(tmp_path / "chatty.wasm", WIRES)
    with pytest.raises(WitnessLimitError) as err:
        _within(20, lambda: WitnessCalculator(path, BOUNDS))
    assert err.value.bound == "time"


def test_bounds_are_checked():
    with pytest.raises(ValueError, match="positive"):
        WasmBounds(deadline_secs=0)
    with pytest.raises(ValueError, match="one wasm page"):
        WasmBounds(memory_bytes=1000)
