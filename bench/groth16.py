"""Groth16 on the CPU: per-kind setup and proving figures, and the NTT and G1 MSM curves.

Usage: .venv/bin/python bench/groth16.py [--scale N] [--max-log 16] [--repeat 3] [--curves-only]
Prints, per proof kind at the given scale: constraints, domain, parameter generation
time (fresh, in a temporary directory), and per-partition synthesis / NTT (the 7 of H)
/ G1 MSMs / G2 MSM / verify in ms (median over --repeat proofs). Then the CPU NTT and
the arkworks G1 MSM for 2^10 .. 2^max-log, and their ratio (aim: NTT <= MSM / 3).
"""
from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from py_arkworks_bls12381 import G1Point

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16 import api, ntt
from gpu_engine.groth16.field import R
from gpu_engine.groth16.setup import FixedBase
from gpu_engine.kinds import PROOF_KINDS


def bench_kinds(scale: int, repeat: int) -> None:
    backend = CpuBackend()
    tmp = Path(tempfile.mkdtemp(prefix="vm-bench-params-"))
    try:
        print(f"{'kind':<14}{'constr':>7}{'domain':>8}{'setup s':>9}{'synth':>8}{'ntt':>8}{'msm_g1':>8}"
              f"{'msm_g2':>8}{'verify':>8}{'total':>8}  (ms per partition, median of {repeat})")
        for kind in PROOF_KINDS:
            t0 = time.perf_counter()
            params = api.load_params(kind, tmp, scale, create=True)
            setup_s = time.perf_counter() - t0
            rows = []
            for i in range(repeat):
                index = i % PROOF_KINDS[kind].partitions
                witness = api.synthesize_partition(kind, f"bench-{i}", index, scale)
                pp = api.prove_partition(params, witness, backend)
                t1 = time.perf_counter()
                ok = api.verify_partition(params.vk, pp.public_inputs, pp.proof)
                verify_ms = (time.perf_counter() - t1) * 1000
                if not ok:
                    raise SystemExit(f"{kind}: proof did not verify")
                t = pp.timings
                rows.append((t["synthesis_ms"], t["ntt_ms"], t["msm_g1_ms"], t["msm_g2_ms"], verify_ms))
            med = [statistics.median(col) for col in zip(*rows)]
            print(f"{kind:<14}{params.num_constraints:>7}{params.domain_size:>8}{setup_s:>9.2f}"
                  + "".join(f"{v:>8.1f}" for v in med) + f"{sum(med):>8.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_curves(max_log: int, repeat: int) -> None:
    rng = random.Random(1)
    fb = FixedBase(G1Point())
    distinct = [fb.mul(rng.randrange(1, R)) for _ in range(1024)]
    distinct = [G1Point.from_xy_bytes_unchecked_be(p.to_xy_bytes_be()) for p in distinct]  # affine
    backend = CpuBackend()
    print(f"\n{'size':>6}{'ntt ms':>10}{'msm_g1 ms':>11}{'ntt/msm':>9}")
    for log_n in range(10, max_log + 1):
        n = 1 << log_n
        values = [rng.randrange(R) for _ in range(n)]
        points = (distinct * (n // len(distinct) + 1))[:n]
        nt, mt = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            ntt.ntt(values)
            nt.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            backend.msm_g1(points, values)
            mt.append((time.perf_counter() - t0) * 1000)
        n_ms, m_ms = statistics.median(nt), statistics.median(mt)
        print(f"{'2^' + str(log_n):>6}{n_ms:>10.1f}{m_ms:>11.1f}{n_ms / m_ms:>9.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--max-log", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--curves-only", action="store_true", help="skip the per-kind proofs")
    args = ap.parse_args()
    print(f"NTT arithmetic: {'gmpy2' if ntt.HAVE_GMPY2 else 'plain ints'} packed rows; scale {args.scale}")
    if not args.curves_only:
        bench_kinds(args.scale, args.repeat)
    bench_curves(args.max_log, args.repeat)


if __name__ == "__main__":
    main()
