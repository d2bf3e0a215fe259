"""The CUDA backend next to the CPU backend: NTT, G1 MSM and one partition's device stage.

Usage: .venv/bin/python bench/gpu.py [--ntt 16 24] [--msm 12 22] [--cpu-max-log 18] [--hot-log 20]
                                     [--repeat 3] [--kind porep-c2] [--scale 1] [--no-partition] [--out PATH]
Device figures are medians over --repeat runs after one warm-up (tables, compilation):
"gpu ms" is the device work on data already resident (the 7-NTT column: H from a, b, c),
"e2e ms" adds the Python-int packing and the transfers; the CPU backend runs sizes up to
2^cpu-max-log (and each such size is also a correctness check). Writes the table as
Markdown to --out (default bench/results/gpu.md). Without a GPU it says so and exits 0;
--emulate runs the same recipes on the host build of the kernels (tiny sizes: a check of
this script, not a measurement). The hot-bucket case is an MSM of 2^hot-log points with a
circom-like witness (half ones, the rest zeros but for 1% full-size values) with one thread per
bucket and with hot buckets split in chunks: its time, and the largest share of the bucket
additions one thread does in sequence, before and after.
Aims on an H200 for this version: NTT 2^20 <= 5 ms, G1 MSM 2^20 <= 100 ms.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from py_arkworks_bls12381 import G1Point, Scalar

from gpu_engine import backends
from gpu_engine.backends import limbs
from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.backends.device_plan import bucket_work, window_bits
from gpu_engine.groth16.field import R

DISTINCT_BASES_LOG = 16  # larger MSMs tile these points (bucket work does not depend on it)


def random_fr_limbs(n: int, rng: np.random.Generator) -> np.ndarray:
    """n canonical Fr elements as packed limbs, drawn below 2^254 < r without Python ints."""
    out = rng.integers(0, 2**32, size=(n, 8), dtype=np.uint64).astype(np.uint32)
    out[:, 7] &= 0x3FFFFFFF
    return out.ravel()


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def rate(n: int, ms: float | None) -> str:
    return "-" if not ms else f"{n / ms * 1000:.3g}"


def bench_ntt(cuda, lo: int, hi: int, cpu_max: int, repeat: int, rng) -> list[str]:
    plan, ops, cpu = cuda._ntt, cuda.ops, CpuBackend()
    rows = ["| NTT | gpu ms | elems/s | H (7 NTT) gpu ms | e2e ms | cpu ms | cpu elems/s | speedup |",
            "|---|---|---|---|---|---|---|---|"]
    print("\n".join(rows), flush=True)
    for log_n in range(lo, hi + 1):
        n = 1 << log_n
        data = random_fr_limbs(n, rng)
        buf = plan._load("bench:ntt", data, log_n)
        step = lambda: (plan.transform(buf, log_n, inverse=False, coset=False), ops.synchronize())  # noqa: E731 - a one-line thunk reads better inline
        step()
        gpu_ms = median_ms(step, repeat)
        bufs = [plan._load(f"bench:h{i}", random_fr_limbs(n, rng), log_n) for i in range(3)]
        h_step = lambda: (plan.compute_h_device(*bufs, log_n), ops.synchronize())  # noqa: E731 - a one-line thunk reads better inline
        h_step()
        h_ms = median_ms(h_step, repeat)
        for tag in ("bench:h0", "bench:h1", "bench:h2"):
            ops.release(tag)
        e2e_ms = cpu_ms = None
        if log_n <= cpu_max:
            values = limbs.unpack_fr(data)
            t0 = time.perf_counter()
            got = cuda.ntt(values)
            e2e_ms = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            want = cpu.ntt(values)
            cpu_ms = (time.perf_counter() - t0) * 1000
            if got != want:
                raise SystemExit(f"NTT 2^{log_n}: GPU and CPU disagree")
        speed = f"{cpu_ms / gpu_ms:.3g}x" if cpu_ms else "-"
        rows.append(f"| 2^{log_n} | {fmt(gpu_ms, 3)} | {rate(n, gpu_ms)} | {fmt(h_ms, 3)} | {fmt(e2e_ms, 1)} "
                    f"| {fmt(cpu_ms, 1)} | {rate(n, cpu_ms)} | {speed} |")
        print(rows[-1], flush=True)
    ops.release("bench:ntt")
    return rows


def distinct_points(log_n: int, seed: int) -> tuple[list[G1Point], np.ndarray]:
    rng = random.Random(seed)
    a, d = G1Point() * Scalar(rng.randrange(1, R)), G1Point() * Scalar(rng.randrange(1, R))
    pts = []
    for _ in range(1 << log_n):
        pts.append(a)
        a = a + d
    return pts, limbs.pack_g1_affine(pts)


def bench_msm(cuda, lo: int, hi: int, cpu_max: int, repeat: int, rng) -> list[str]:
    plan = cuda._msm
    base_log = min(DISTINCT_BASES_LOG, hi)
    pts, packed = distinct_points(base_log, 7)
    rows = ["| G1 MSM | window | gpu ms | points/s | cpu ms | cpu points/s | speedup |",
            "|---|---|---|---|---|---|---|"]
    print("\n".join(rows), flush=True)
    for log_n in range(lo, hi + 1):
        n = 1 << log_n
        reps = max(1, n >> base_log)
        bases = plan.load_bases(np.tile(packed, reps)[: n * 24], f"bench:{log_n}")
        scalars = random_fr_limbs(n, rng)
        plan.msm(bases, n, scalars)
        gpu_ms = median_ms(lambda: plan.msm(bases, n, scalars), repeat)
        cpu_ms = None
        if log_n <= cpu_max:
            got = limbs.g1_from_affine(limbs.xyzz_mont_to_affine(plan.msm(bases, n, scalars)))
            point_list = (pts * reps)[:n]
            ark_scalars = [Scalar(v) for v in limbs.unpack_fr(scalars)]
            t0 = time.perf_counter()
            want = G1Point.multiexp_unchecked(point_list, ark_scalars)
            cpu_ms = (time.perf_counter() - t0) * 1000
            if got != want:
                raise SystemExit(f"MSM 2^{log_n}: GPU and CPU disagree")
        plan._bases.pop(f"bench:{log_n}", None)
        cuda.ops.release(f"bases:bench:{log_n}")
        speed = f"{cpu_ms / gpu_ms:.3g}x" if cpu_ms else "-"
        rows.append(f"| 2^{log_n} | {plan.window or window_bits(n)} | {fmt(gpu_ms, 2)} | {rate(n, gpu_ms)} "
                    f"| {fmt(cpu_ms, 1)} | {rate(n, cpu_ms)} | {speed} |")
        print(rows[-1], flush=True)
    return rows


def zero_one_limbs(n: int, rng: np.random.Generator, full_fraction: float = 0.01) -> np.ndarray:
    """A circom-like witness as packed limbs: half ones, the rest zeros but for a few full-size values."""
    out = np.zeros((n, 8), dtype=np.uint32)
    out[rng.permutation(n)[: n // 2], 0] = 1
    full = rng.permutation(n)[: max(1, int(n * full_fraction))]
    out[full] = random_fr_limbs(full.size, rng).reshape(-1, 8)
    return out.ravel()


def bench_hot_buckets(cuda, log_n: int, cpu_max: int, repeat: int, rng) -> list[str]:
    plan = cuda._msm
    n = 1 << log_n
    base_log = min(DISTINCT_BASES_LOG, log_n)
    pts, packed = distinct_points(base_log, 11)
    reps = max(1, n >> base_log)
    bases = plan.load_bases(np.tile(packed, reps)[: n * 24], "bench:hot")
    scalars = zero_one_limbs(n, rng)
    want = None
    if log_n <= cpu_max:
        want = G1Point.multiexp_unchecked((pts * reps)[:n], [Scalar(v) for v in limbs.unpack_fr(scalars)])
    rows = [f"| 0/1 witness MSM 2^{log_n} | gpu ms | largest share of the bucket additions one thread does "
            "| longest chain of additions |", "|---|---|---|---|"]
    print("\n".join(rows), flush=True)
    split_before, unsplit = plan.split, None
    try:
        for split in (False, True):
            plan.split = split
            got = limbs.g1_from_affine(limbs.xyzz_mont_to_affine(plan.msm(bases, n, scalars)))
            if want is not None and got != want:
                raise SystemExit(f"hot-bucket MSM 2^{log_n} (split={split}): GPU and CPU disagree")
            if split and got != unsplit:
                raise SystemExit(f"hot-bucket MSM 2^{log_n}: split and unsplit buckets disagree")
            unsplit = got
            ms = median_ms(lambda: plan.msm(bases, n, scalars), repeat)
            lay = plan.last_layout
            work = bucket_work(plan.bucket_counts(), lay.c, lay.log_chunk)
            share = work["largest_chunk_share"] if split else work["largest_bucket_share"]
            chain = work["longest_chain"] if split else work["largest_bucket"]
            name = f"split in chunks of {1 << lay.log_chunk}" if split else "one thread per bucket"
            rows.append(f"| {name} ({lay.c}-bit windows) | {fmt(ms, 2)} | {share:.2%} | {chain} |")
            print(rows[-1], flush=True)
    finally:
        plan.split = split_before
        plan._bases.pop("bench:hot", None)
        cuda.ops.release("bases:bench:hot")
    return rows


def bench_partition(cuda, kind: str, scale: int, repeat: int) -> list[str]:
    from gpu_engine.groth16 import api

    cpu = CpuBackend()
    with tempfile.TemporaryDirectory(prefix="vm-bench-gpu-params-") as tmp:
        params = api.load_params(kind, tmp, scale, create=True)
        witness = api.synthesize_partition(kind, "ps-bench-gpu-1", 0, scale)
        rows = [f"| partition device stage ({kind}, scale {scale}, domain {params.domain_size}) | ms |", "|---|---|"]
        print("\n".join(rows), flush=True)
        for name, backend in ((cuda.name, cuda), ("cpu", cpu)):
            out = api.prove_device(params, witness, backend)
            proof = api.prove_finalize(params, witness, out, cpu)
            if not api.verify_partition(params.vk, proof.public_inputs, proof.proof):
                raise SystemExit(f"{kind}: the {name} partition proof did not verify")
            ms = median_ms(lambda b=backend: api.prove_device(params, witness, b), repeat)
            rows.append(f"| {name} | {ms:.1f} |")
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ntt", type=int, nargs=2, default=(16, 24), metavar=("MIN_LOG", "MAX_LOG"))
    ap.add_argument("--msm", type=int, nargs=2, default=(12, 22), metavar=("MIN_LOG", "MAX_LOG"))
    ap.add_argument("--cpu-max-log", type=int, default=18)
    ap.add_argument("--hot-log", type=int, default=20, help="log2 size of the 0/1-witness MSM (0: skip it)")
    ap.add_argument("--no-partition", action="store_true", help="skip the partition device stage")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kind", default="porep-c2")
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--emulate", action="store_true", help="host build of the kernels instead of a GPU")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "gpu.md")
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)

    reason = None if args.emulate else backends.cuda_unavailable_reason()
    if reason is not None:
        note = f"# GPU bench\n\nNot run: no CUDA device ({reason}).\n"
        args.out.write_text(note)
        print(note.strip(), f"\n(written to {args.out})")
        return

    t0 = time.perf_counter()
    if args.emulate:
        from gpu_engine.backends.emulation import EmulatedBackend

        cuda = EmulatedBackend()
    else:
        from gpu_engine.backends.cuda import CudaBackend

        cuda = CudaBackend(0)
    open_s = time.perf_counter() - t0
    rng = np.random.default_rng(1)
    lines = [f"# GPU bench: {cuda.device_name} ({cuda.arch})", "",
             f"Backend opened (context + kernel modules, compiled or from cache) in {open_s:.1f} s.", ""]
    print("\n".join(lines), flush=True)
    try:
        sections = [
            lambda: bench_ntt(cuda, *args.ntt, args.cpu_max_log, args.repeat, rng),
            lambda: bench_msm(cuda, *args.msm, args.cpu_max_log, args.repeat, rng),
        ]
        if args.hot_log:
            sections.append(lambda: bench_hot_buckets(cuda, args.hot_log, args.cpu_max_log, args.repeat, rng))
        if not args.no_partition:
            sections.append(lambda: bench_partition(cuda, args.kind, args.scale, args.repeat))
        for section in sections:
            lines += section() + [""]
            print(flush=True)
    finally:
        cuda.close()
        args.out.write_text("\n".join(lines) + "\n")
        print(f"(written to {args.out})")


if __name__ == "__main__":
    main()
