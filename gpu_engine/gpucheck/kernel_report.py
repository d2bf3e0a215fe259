"""Each kernel's registers, threads-per-block limit, local and shared memory as PyCUDA reports them.

Run by `make gpucheck` inside its environment (PyCUDA built there): a kernel that spills
(local memory > 0) or cannot take the block size its recipe launches with shows here first.
"""
from __future__ import annotations

import argparse
import sys


def rows(ordinal: int = 0) -> list[dict]:
    import pycuda.driver as drv

    from gpu_engine.backends import cuda
    from gpu_engine.backends.device_plan import SCAN_BLOCK

    drv.init()
    device = drv.Device(ordinal)
    major, minor = device.compute_capability()
    arch = f"sm_{major}{minor}"
    ctx = device.retain_primary_context()
    ctx.push()
    try:
        import pycuda.compiler as compiler

        out = []
        for name in cuda.MODULES:
            module = drv.module_from_buffer(cuda.compiled_module(compiler, name, arch))
            for kernel in cuda.kernel_names(name):
                fn = module.get_function(kernel)
                attr = drv.function_attribute
                block = SCAN_BLOCK if kernel in cuda.FIXED_BLOCK_KERNELS else cuda.DEFAULT_BLOCK
                out.append({
                    "module": name, "kernel": kernel, "arch": arch,
                    "registers": fn.get_attribute(attr.NUM_REGS),
                    "max_threads_per_block": fn.get_attribute(attr.MAX_THREADS_PER_BLOCK),
                    "local_bytes": fn.get_attribute(attr.LOCAL_SIZE_BYTES),
                    "shared_bytes": fn.get_attribute(attr.SHARED_SIZE_BYTES),
                    "launch_block": block,
                })
        return out
    finally:
        drv.Context.pop()
        ctx.detach()


def markdown(table: list[dict]) -> str:
    lines = ["| module | kernel | regs | max threads/block | launched with | local B | shared B | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in table:
        verdict = []
        if r["local_bytes"]:
            verdict.append("spills to local memory")
        if r["launch_block"] > r["max_threads_per_block"]:
            verdict.append("launch block too large")
        lines.append(f"| {r['module']} | {r['kernel']} | {r['registers']} | {r['max_threads_per_block']} "
                     f"| {r['launch_block']} | {r['local_bytes']} | {r['shared_bytes']} | "
                     f"{'; '.join(verdict) or 'ok'} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="gpucheck kernels", description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", type=int, default=0)
    args = ap.parse_args(argv)
    table = rows(args.gpu)
    print(markdown(table))
    bad = [r for r in table if r["launch_block"] > r["max_threads_per_block"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
