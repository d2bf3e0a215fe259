"""circom circuits proved by snarkjs and by this engine, side by side: the prove step only.

Usage: .venv/bin/python bench/circom.py [--sizes 12,14,16] [--repeat 3] [--chain full|scalar]
                                         [--backends cpu,cuda] [--processes N]

One circuit (the test suite's multiplier chain, sized so that its domain is exactly 2^k rows;
`--chain scalar` for the plain chain whose B matrix holds one signal) per size, compiled for
BLS12-381 with the pinned circom and set up with the pinned snarkjs.
The powers of tau and the zkeys are cached outside the repository (~/.cache/vastmanager-bench,
or $VASTMANAGER_BENCH_CACHE): the first run pays the ceremony (a 2^16 one takes about an hour
here on 2 cores, 2^14 about 15-50 minutes depending on load), later runs start at once.

Timed, as medians of --repeat proofs of the same input:
- snarkjs: `groth16.prove` in one node process that loaded snarkjs, the zkey and the witness
  once (no process start, no file reads; its per-proof zkey parsing is part of its prove), and
  its witness calculation (`wtns.calculate`) separately.
- engine: the per-proof steps of the pipeline, each timed: witness (circom's wasm in wasmtime),
  constraint check (the r1cs), rows (A.w, B.w), NTT (H on the odd coset), each G1 MSM (A, B1,
  C, H), the G2 MSM (B2) and the assembly. The zkey's conversion happens once at registration
  and the converted key is loaded once per process: both are printed, not counted per proof.
- engine "cpu xN": the same steps with H+its MSM, the B2 MSM and the A, B1, C MSMs as five tasks
  of an N-process pool (`gpu_engine.circom.parallel`): its step columns are the tasks' own times,
  which overlap; "assemble" there is what the tasks' wall time leaves (transfers, assembly).
Every engine proof of the run is checked with `snarkjs groth16 verify`.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpu_engine import backends
from gpu_engine.circom import snarkjs_json
from gpu_engine.circom.api import CircuitRef
from gpu_engine.circom.keycache import dump_key, load_key_bytes
from gpu_engine.circom.parallel import preload_key, prove_parallel
from gpu_engine.circom.prover import make_witness, prove_device, prove_finalize
from gpu_engine.circom.r1cs import check_witness, read_r1cs
from gpu_engine.circom.witness import WitnessCalculator
from gpu_engine.circom.zkey import read_zkey
from gpu_engine.engine.pools import ProcessPool
from gpu_engine.groth16.verifier import verify_partition
from tests.circom import tools

BENCH_CACHE = Path(os.environ.get("VASTMANAGER_BENCH_CACHE", Path.home() / ".cache" / "vastmanager-bench"))
NUM_PUBLIC = 2  # out and b: the chain's rows are 2^k minus these and the one row snarkjs adds
NODE_SCRIPT = Path(__file__).resolve().parent / "snarkjs_prove.mjs"
INPUT = {"a": "3", "b": "5"}
STEPS = ("witness", "check", "rows", "ntt", "msm_a", "msm_b1", "msm_c", "msm_h", "msm_b2", "assemble", "other")


CHAINS = {"full": ("MultiplierChain", "chain"), "scalar": ("ScalarMultiplierChain", "scalar_chain")}


def chain_source(log_n: int, chain: str = "full") -> Path:
    """A main component instantiating one of the test suite's chains with 2^log_n rows in all."""
    template, stem = CHAINS[chain]
    links = (1 << log_n) - NUM_PUBLIC - 1
    src = BENCH_CACHE / "sources" / f"{stem}_{log_n}.circom"
    text = ('pragma circom 2.1.0;\n\ninclude "lib/multiplier_chain.circom";\n\n'
            f"component main {{public [b]}} = {template}({links});\n")
    src.parent.mkdir(parents=True, exist_ok=True)
    if not src.exists() or src.read_text() != text:
        src.write_text(text)
    return src


def has_ceremony(power: int) -> bool:
    root = BENCH_CACHE / "ptau"
    return any((root / f"{tools.tool_versions()}-{p}" / "final.ptau").exists() for p in range(power, 29))


def prepare(sizes: list[int], chain: str) -> dict[int, tools.CircuitFiles]:
    power = max(sizes)
    if not has_ceremony(power):
        print(f"First run at 2^{power}: running a BLS12-381 powers of tau of 2^{power} and the Groth16 setups. "
              "A 2^16 ceremony takes about an hour here (2 cores), 2^14 some minutes; the result is cached in "
              f"{BENCH_CACHE} and later runs start at once.", flush=True)
    circuits = {}
    for log_n in sizes:
        t0 = time.perf_counter()
        circuits[log_n] = tools.build_circuit(chain_source(log_n, chain), power=power, cache_root=BENCH_CACHE)
        took = time.perf_counter() - t0
        if took > 5:
            print(f"  2^{log_n}: compiled and set up in {took:.0f} s", flush=True)
    return circuits


def snarkjs_side(circuit: tools.CircuitFiles, repeat: int) -> dict[str, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(INPUT, fh)
    try:
        out = tools.run(["node", NODE_SCRIPT, circuit.zkey, circuit.wasm, fh.name, str(repeat)], timeout=3600)
    finally:
        os.unlink(fh.name)
    data = json.loads(out.strip().splitlines()[-1])
    return {"prove": statistics.median(data["prove_ms"]), "witness": statistics.median(data["witness_ms"])}


class TimedBackend:
    """Passes calls to a backend and records each one's wall time under the step it serves."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.times: dict[str, float] = {}

    def _timed(self, step: str, fn, *args, **kwargs):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        if hasattr(self.inner, "synchronize"):
            self.inner.synchronize()
        self.times[step] = (time.perf_counter() - t0) * 1000.0
        return out

    def compute_h_odd_coset(self, a, b, c):
        return self._timed("ntt", self.inner.compute_h_odd_coset, a, b, c)

    def msm_g1(self, points, scalars, *, bases_key=None):
        step = "msm_" + (bases_key or "?").rsplit("/", 1)[-1]
        return self._timed(step, self.inner.msm_g1, points, scalars, bases_key=bases_key)

    def msm_g2(self, points, scalars, *, bases_key=None):
        return self._timed("msm_b2", self.inner.msm_g2, points, scalars, bases_key=bases_key)


def load_engine_key(circuit: tools.CircuitFiles) -> tuple[object, CircuitRef, float, float]:
    """The converted key as registration makes it, written beside the zkey for pool children;
    (key, its reference, convert seconds, load seconds)."""
    raw = circuit.zkey.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    t0 = time.perf_counter()
    converted = dump_key(read_zkey(raw), digest)
    t1 = time.perf_counter()
    key = load_key_bytes(converted, circuit.name, digest)
    load_s = time.perf_counter() - t1
    path = circuit.directory / "engine.key"
    path.write_bytes(converted)
    return key, CircuitRef(circuit.name, digest, str(path)), t1 - t0, load_s


def _synthesis(calc, r1cs, key, steps: dict[str, float]):
    """Witness, constraint check and row evaluations, each timed into `steps`."""
    t0 = time.perf_counter()
    values = calc.calculate(INPUT)
    t1 = time.perf_counter()
    check_witness(r1cs, values)
    t2 = time.perf_counter()
    witness = make_witness(key, "bench", 0, values, 0.0)
    steps.update(witness=(t1 - t0) * 1000.0, check=(t2 - t1) * 1000.0, rows=(time.perf_counter() - t2) * 1000.0)
    return witness


def _verified(circuit: tools.CircuitFiles, key, proof, workdir: Path) -> None:
    if not verify_partition(key.vk, proof.public_inputs, proof.proof):
        raise SystemExit(f"engine proof at {circuit.name} failed the engine's own verification")
    ok = tools.groth16_verify(circuit.vkey_json, snarkjs_json.public_signals(proof.public_inputs),
                              snarkjs_json.proof(proof.proof), workdir)
    if not ok:
        raise SystemExit(f"snarkjs refused the engine's proof at {circuit.name}")


def _same_priority(pool) -> None:
    """Pool children run at a lower priority (the engine's policy, for the web process's sake);
    here they should compete on equal terms with snarkjs and the sequential prover."""
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    for pid in pool.pids():
        try:
            os.setpriority(os.PRIO_PROCESS, pid, mine)
        except OSError:
            print(f"  (could not raise pool child {pid} to this process's priority: its times include nice "
                  "10; run as root for equal terms)")
            return


def parallel_side(circuit: tools.CircuitFiles, key, ref: CircuitRef, pool, repeat: int,
                  workdir: Path) -> dict[str, float]:
    """The CPU prover with its five parts as tasks of a process pool (gpu_engine.circom.parallel)."""
    calc = WitnessCalculator(circuit.wasm)
    r1cs = read_r1cs(circuit.r1cs.read_bytes())
    runs: dict[str, list[float]] = defaultdict(list)
    for i in range(repeat + 1):
        steps: dict[str, float] = {}
        t_start = time.perf_counter()
        witness = _synthesis(calc, r1cs, key, steps)
        proof = prove_parallel(ref, key, witness, pool)
        total = (time.perf_counter() - t_start) * 1000.0
        t = proof.timings
        steps.update(ntt=t["ntt_ms"], msm_a=t["msm_a_ms"], msm_b1=t["msm_b1_ms"], msm_c=t["msm_c_ms"],
                     msm_h=t["msm_h_ms"], msm_b2=t["msm_b2_ms"])
        steps["assemble"] = total - t["parallel_wall_ms"] - steps["witness"] - steps["check"] - steps["rows"]
        if i == 0:
            _same_priority(pool)
            continue
        for name, ms in steps.items():
            runs[name].append(ms)
        runs["total"].append(total)
    _verified(circuit, key, proof, workdir)
    return {name: statistics.median(v) for name, v in runs.items()}


def engine_side(circuit: tools.CircuitFiles, key, backend, repeat: int, workdir: Path) -> dict[str, float]:
    calc = WitnessCalculator(circuit.wasm)
    r1cs = read_r1cs(circuit.r1cs.read_bytes())
    timed = TimedBackend(backend)
    cpu = backends.create_backend("cpu")
    runs: dict[str, list[float]] = defaultdict(list)
    for i in range(repeat + 1):  # the first proof warms caches (device bases, twiddles): not counted
        steps: dict[str, float] = {}
        t_start = time.perf_counter()
        witness = _synthesis(calc, r1cs, key, steps)
        timed.times = {}
        dev = prove_device(key, witness, timed)
        finalize_tail = TimedBackend(cpu if backend.name != "cpu" else backend)
        t0 = time.perf_counter()
        proof = prove_finalize(key, witness, dev, finalize_tail)
        steps.update(timed.times)
        steps.update(finalize_tail.times)
        steps["assemble"] = (time.perf_counter() - t0) * 1000.0 - finalize_tail.times["msm_b2"]
        total = (time.perf_counter() - t_start) * 1000.0
        steps["other"] = total - sum(steps.values())  # the prover's own Python: c = a*b, scalar lists
        if i == 0:
            continue
        for name, ms in steps.items():
            runs[name].append(ms)
        runs["total"].append(total)
    _verified(circuit, key, proof, workdir)
    return {name: statistics.median(v) for name, v in runs.items()}


def backend_names(requested: str) -> list[str]:
    names = []
    for name in requested.split(","):
        name = name.strip()
        if name == "cuda" and backends.device_count() == 0:
            print("cuda: no device here (skipped)")
            continue
        names.append(name)
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="12,14,16", help="log2 of the domain sizes, comma separated")
    ap.add_argument("--repeat", type=int, default=3, help="proofs per size and prover (median)")
    ap.add_argument("--backends", default="cpu,cuda", help="engine backends to run where present")
    ap.add_argument("--chain", choices=sorted(CHAINS), default="full",
                    help="full: x[i] = (x[i-1] + i) * (x[i-2] + b), every wire in A and B; "
                         "scalar: x[i] = x[i-1] * b + i, B trivial")
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 2,
                    help="pool processes for the parallel CPU prover (0: skip it)")
    args = ap.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if not sizes or min(sizes) < 4 or max(sizes) > 20:
        ap.error("--sizes takes log2 sizes between 4 and 20")
    reason = tools.unavailable_reason()
    if reason:
        raise SystemExit(reason)
    tools.ensure_node_tools()
    names = backend_names(args.backends)
    circuits = prepare(sizes, args.chain)
    shape = "both factors from the witness" if args.chain == "full" else "B = b only"
    print(f"circuit: {CHAINS[args.chain][0]} ({shape})")
    results = []
    with tempfile.TemporaryDirectory(prefix="vm-bench-circom-") as tmp:
        for log_n in sizes:
            circuit = circuits[log_n]
            theirs = snarkjs_side(circuit, args.repeat)
            key, ref, convert_s, load_s = load_engine_key(circuit)
            row = {"log_n": log_n, "constraints": circuit.info["constraints"], "snarkjs": theirs,
                   "convert_s": convert_s, "load_s": load_s, "engine": {}}
            for name in names:
                backend = backends.create_backend(name)
                try:
                    row["engine"][name] = engine_side(circuit, key, backend, args.repeat, Path(tmp) / f"{log_n}-{name}")
                finally:
                    backend.close()
            if args.processes > 0:
                pool = ProcessPool("bench-prove", args.processes, preload=functools.partial(preload_key, ref),
                                   forkserver_preload=["gpu_engine.circom.parallel"])
                pool.start()
                try:
                    row["engine"][f"cpu x{args.processes}"] = parallel_side(
                        circuit, key, ref, pool, args.repeat, Path(tmp) / f"{log_n}-parallel")
                finally:
                    pool.shutdown()
            results.append(row)
            report_row(row)
    summary(results)


def report_row(row: dict) -> None:
    s = row["snarkjs"]
    print(f"\n2^{row['log_n']} ({row['constraints']} constraints): snarkjs prove {s['prove']:.0f} ms "
          f"(+ wtns.calculate {s['witness']:.0f} ms, wasm compile included);\n  zkey conversion at registration "
          f"{row['convert_s']:.2f} s, "
          f"converted key load per process {row['load_s']:.2f} s")
    print("  " + f"{'engine':<9}" + "".join(f"{step:>9}" for step in STEPS) + f"{'total':>9}{'vs snarkjs':>12}")
    for name, t in row["engine"].items():
        prove_only = t["total"] - t["witness"]
        print("  " + f"{name:<9}" + "".join(f"{t.get(step, 0.0):>9.0f}" for step in STEPS)
              + f"{t['total']:>9.0f}{s['prove'] / prove_only:>11.2f}x")
    print("  (ms, medians; 'vs snarkjs' = snarkjs prove / engine total without the witness step; for cpu xN "
          "the steps overlap; each engine proof verified by snarkjs)", flush=True)


def summary(results: list[dict]) -> None:
    print("\nsize   snarkjs prove ms   " + "   ".join(f"{n} ms (ratio)" for n in results[0]["engine"]))
    for row in results:
        s = row["snarkjs"]["prove"]
        cells = "   ".join(f"{t['total'] - t['witness']:>7.0f} ({s / (t['total'] - t['witness']):.2f}x)"
                           for t in row["engine"].values())
        print(f"2^{row['log_n']:<4} {s:>14.0f}     {cells}")


if __name__ == "__main__":
    try:
        main()
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"{exc.cmd} failed: {exc.stderr}") from exc
