"""Launch geometry, computed once for both executors and checked against the kernels' own source.

`geometry` is the grid and block a recipe's launch gets (CudaOps and HostOps both use it).
`check` asserts what the device needs: one argument of the right kind per parameter (a buffer
for a pointer, an int that fits in 32 bits for a `uint32_t`), the fixed 1024-thread block of
the scan kernels, and a grid that covers exactly the range the kernel guards (`if (i < n)`).
The signatures and guards are read from kernels/*.cu, so the check cannot drift from them;
on machines without a GPU the host emulation runs it, so a wrong launch fails there first.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
DEFAULT_BLOCK = 256
SCAN_BLOCK = 1024  # VM_SCAN_BLOCK in msm.cu
MAX_BLOCK = 1024
# Kernels written for one block size: their shared arrays and block indexing assume it.
FIXED_BLOCK_KERNELS = {"scan_block_kernel": SCAN_BLOCK, "scan_add_kernel": SCAN_BLOCK}
_SIGNATURE = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)\s*\{')
_GUARD = re.compile(r"if\s*\(\s*(\w+)\s*<\s*(\w+)\s*\)")
_SINGLE = re.compile(r"if\s*\(\s*VM_TID\s*==\s*0\s*\)")


class LaunchError(ValueError):
    """A launch the device would run wrongly: bad arguments, block or grid."""


@dataclass(frozen=True)
class Signature:
    name: str
    params: tuple[tuple[str, str], ...]  # (C type, name)
    range_param: int | None  # index of the uint32 parameter the kernel's guard compares with
    single_thread: bool = False

    def is_pointer(self, index: int) -> bool:
        return self.params[index][0].endswith("*")


@cache
def signatures() -> dict[str, Signature]:
    """Every `extern "C" __global__` kernel of kernels/*.cu with its parameters and guard."""
    found: dict[str, Signature] = {}
    for path in sorted(KERNEL_DIR.glob("*.cu")):
        if path.name.startswith("host_"):
            continue
        text = path.read_text()
        matches = list(_SIGNATURE.finditer(text))
        for i, match in enumerate(matches):
            body = text[match.end(): matches[i + 1].start() if i + 1 < len(matches) else len(text)]
            params = []
            for raw in match.group(2).split(","):
                words = raw.replace("*", " * ").split()
                params.append((" ".join(w for w in words[:-1] if w != "const"), words[-1]))
            names = [p[1] for p in params]
            guard = _GUARD.search(body)
            range_param = names.index(guard.group(2)) if guard and guard.group(2) in names else None
            found[match.group(1)] = Signature(match.group(1), tuple(params), range_param,
                                              single_thread=bool(_SINGLE.search(body)))
    return found


def geometry(name: str, count: int, block: int | None = None) -> tuple[int, int]:
    """(grid, block) for `count` thread indices: the recipe's block, else the kernel's fixed one,
    else DEFAULT_BLOCK."""
    block = block or FIXED_BLOCK_KERNELS.get(name, DEFAULT_BLOCK)
    return max(1, -(-count // block)), block


def check(name: str, grid: int, block: int, args: Sequence[Any], is_buffer: Callable[[Any], bool]) -> None:
    """Raise LaunchError unless kernel `name` launched as (grid, block) with `args` is what it needs."""
    sig = signatures().get(name)
    if sig is None:
        raise LaunchError(f"no kernel named {name} in {KERNEL_DIR.name}/*.cu")
    if len(args) != len(sig.params):
        raise LaunchError(f"{name} takes {len(sig.params)} arguments, the launch passes {len(args)}")
    for i, (arg, (ctype, pname)) in enumerate(zip(args, sig.params)):
        if sig.is_pointer(i):
            if not is_buffer(arg):
                raise LaunchError(f"{name}: argument {pname} must be a device buffer, got {type(arg).__name__}")
        elif ctype == "uint32_t":
            if isinstance(arg, bool) or not isinstance(arg, (int, np.uint32)):
                raise LaunchError(f"{name}: argument {pname} must be an int or numpy.uint32, "
                                  f"got {type(arg).__name__} (the device reads 4 bytes)")
            if not 0 <= int(arg) < 2**32:
                raise LaunchError(f"{name}: argument {pname}={int(arg)} does not fit in 32 bits")
        else:
            raise LaunchError(f"{name}: parameter type {ctype} of {pname} is not one launches can pass")
    if not 1 <= block <= MAX_BLOCK:
        raise LaunchError(f"{name}: block of {block} threads; a block holds 1 to {MAX_BLOCK}")
    fixed = FIXED_BLOCK_KERNELS.get(name)
    if fixed is not None and block != fixed:
        raise LaunchError(f"{name} is written for blocks of {fixed} threads, launched with {block}")
    if sig.single_thread:
        wanted = 1
    elif sig.range_param is not None:
        wanted = max(1, -(-int(args[sig.range_param]) // block))
    else:
        return
    if grid != wanted:
        param = sig.range_param  # not None here unless single_thread: it returned above otherwise
        what = ("1 thread" if sig.single_thread or param is None
                else f"{sig.params[param][1]}={int(args[param])}")
        raise LaunchError(f"{name}: a grid of {grid} blocks of {block} for {what}; it needs exactly {wanted}")
