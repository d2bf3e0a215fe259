"""The launch recipes of the NTT family and the G1 MSM, written once for two executors.

`KernelOps` is what a recipe needs from an executor: cached buffers, copies and kernel
launches by name. `cuda.CudaOps` runs them on a GPU; `emulation.HostOps` runs the host
build of the same kernel bodies, so these recipes (twiddles, cosets, the counting sort,
the window reduction) are checked on machines without a GPU.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from gpu_engine.backends import limbs, memory
from gpu_engine.backends.limbs import R_MOD
from gpu_engine.backends.memory import Budget, MsmLayout, window_bits  # noqa: F401 - window_bits is re-exported
from gpu_engine.groth16.field import COSET_GENERATOR, ffjs_root_of_unity

FR_BYTES = 32
FP_BYTES = 48
AFFINE_BYTES = 96
XYZZ_BYTES = 192
SCAN_BLOCK = 1024  # VM_SCAN_BLOCK in msm.cu
# Which primitive roots a transform uses: the engine's (7-based, arkworks' domain) or
# ffjavascript's (5-based), which snarkjs's keys are laid out for.
ENGINE_ROOTS = "engine"
FFJS_ROOTS = "ffjs"


class KernelOps(Protocol):
    def buffer(self, tag: str, nbytes: int) -> Any:
        """A buffer kept under `tag`, reused while the size stays the same."""

    def upload(self, buf: Any, data: np.ndarray) -> None: ...

    def download(self, buf: Any, nbytes: int) -> np.ndarray:
        """Returns the first nbytes of buf as a uint32 array (waits for pending work)."""

    def copy(self, dst: Any, src: Any, nbytes: int) -> None: ...

    def zero(self, buf: Any, nbytes: int) -> None: ...

    def launch(self, name: str, count: int, *args: Any, block: int | None = None) -> None:
        """Run kernel `name` over `count` thread indices; ints are passed as uint32."""


class NttPlan:
    """NTTs over Fr with twiddle and coset tables built once per size and kept on device."""

    def __init__(self, ops: KernelOps, budget: Budget | None = None) -> None:
        self.ops = ops
        self.budget = budget or (lambda: None)
        self._tables: dict[tuple, Any] = {}

    def forget(self) -> None:
        """Drop the cached tables (after their buffers were freed)."""
        self._tables.clear()

    # -- tables --

    def _powers(self, key: tuple, base: int, count: int, scale: int = 1) -> Any:
        """Device table [scale * base^i for i < count], cached by key."""
        if key in self._tables:
            return self._tables[key]
        nbits = max(1, (count - 1).bit_length())
        pows = [pow(base, 1 << k, R_MOD) for k in range(nbits)]
        tab = self.ops.buffer(f"{key}:base", nbits * FR_BYTES)
        self.ops.upload(tab, limbs.pack_fr_mont(pows))
        out = self.ops.buffer(f"{key}", count * FR_BYTES)
        self.ops.launch("fr_powers_kernel", count, out, tab, nbits, count)
        if scale != 1:
            self.ops.launch("fr_scale_kernel", count, out, self._const(("c", key), scale), count)
        self._tables[key] = out
        return out

    def _const(self, key: tuple, value: int) -> Any:
        if key not in self._tables:
            buf = self.ops.buffer(f"{key}", FR_BYTES)
            self.ops.upload(buf, limbs.pack_fr_mont([value]))
            self._tables[key] = buf
        return self._tables[key]

    def _twiddles(self, log_n: int, inverse: bool, roots: str = ENGINE_ROOTS) -> Any:
        if roots == ENGINE_ROOTS:
            w = limbs.root_of_unity(log_n)
        elif roots == FFJS_ROOTS:
            w = ffjs_root_of_unity(1 << log_n)
        else:
            raise ValueError(f"unknown roots {roots!r}")
        if inverse:
            w = pow(w, -1, R_MOD)
        return self._powers(("tw", roots, log_n, inverse), w, max(1, (1 << log_n) // 2))

    def _odd_coset_scales(self, log_n: int) -> Any:
        """w_2n^i / n (ffjavascript's root of the double domain): the inverse NTT's 1/n and the
        shift onto the odd coset in one table, applied between snarkjs's two transforms."""
        n = 1 << log_n
        return self._powers(("odd", log_n), ffjs_root_of_unity(2 * n), n, pow(n, -1, R_MOD))

    def _coset_powers(self, log_n: int, inverse: bool) -> Any:
        """g^i for the forward coset NTT; g^-i / n for the inverse (the 1/n folded in)."""
        n = 1 << log_n
        g = COSET_GENERATOR
        if inverse:
            return self._powers(("coset", log_n, True), pow(g, -1, R_MOD), n, pow(n, -1, R_MOD))
        return self._powers(("coset", log_n, False), g, n)

    # -- transforms on device buffers (Montgomery form) --

    def _radix2(self, buf: Any, log_n: int, inverse: bool, roots: str) -> None:
        """Bit reversal and the log2(n) butterfly stages, unscaled (no 1/n)."""
        n = 1 << log_n
        if log_n > 0:
            self.ops.launch("ntt_bitrev_kernel", n, buf, log_n, n)
            tw = self._twiddles(log_n, inverse, roots)
            for log_half in range(log_n):
                self.ops.launch("ntt_butterfly_kernel", n // 2, buf, tw, log_n, log_half, n // 2)

    def transform(self, buf: Any, log_n: int, *, inverse: bool, coset: bool, roots: str = ENGINE_ROOTS) -> None:
        """In place; `roots` picks the domain (the coset is the engine's, so only with its roots)."""
        n = 1 << log_n
        if coset and roots != ENGINE_ROOTS:
            raise ValueError("the coset NTT is defined on the engine's roots only")
        if coset and not inverse:
            self.ops.launch("fr_mul_vec_kernel", n, buf, self._coset_powers(log_n, False), n)
        self._radix2(buf, log_n, inverse, roots)
        if inverse:
            if coset:
                self.ops.launch("fr_mul_vec_kernel", n, buf, self._coset_powers(log_n, True), n)
            elif n > 1:
                self.ops.launch("fr_scale_kernel", n, buf, self._const(("ninv", log_n), pow(n, -1, R_MOD)), n)

    def _load(self, tag: str, values: Sequence[int] | np.ndarray, log_n: int) -> Any:
        """Upload canonical values (ints, or limbs already packed by `limbs.pack_fr`)."""
        n = 1 << log_n
        buf = self.ops.buffer(tag, n * FR_BYTES)
        self.ops.upload(buf, values if isinstance(values, np.ndarray) else limbs.pack_fr(values))
        self.ops.launch("fr_to_mont_kernel", n, buf, n)
        return buf

    def _fetch(self, buf: Any, log_n: int) -> list[int]:
        n = 1 << log_n
        self.ops.launch("fr_from_mont_kernel", n, buf, n)
        return limbs.unpack_fr(self.ops.download(buf, n * FR_BYTES))

    def ntt(self, values: Sequence[int], *, inverse: bool = False, coset: bool = False,
            roots: str = ENGINE_ROOTS) -> list[int]:
        log_n = limbs.log2_exact(len(values))
        memory.check_ntt(len(values), self.budget())
        buf = self._load("ntt:a", values, log_n)
        self.transform(buf, log_n, inverse=inverse, coset=coset, roots=roots)
        return self._fetch(buf, log_n)

    def compute_h(self, a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
        """Coefficients of (A B - C) / Z from evaluations on the domain, all on device."""
        if not len(a) == len(b) == len(c):
            raise ValueError(f"compute_h needs equal lengths, got {len(a)}, {len(b)}, {len(c)}")
        log_n = limbs.log2_exact(len(a))
        memory.check_ntt(len(a), self.budget())
        bufs = [self._load(f"h:{name}", vals, log_n) for name, vals in (("a", a), ("b", b), ("c", c))]
        self.compute_h_device(bufs[0], bufs[1], bufs[2], log_n)
        return self._fetch(bufs[0], log_n)

    def compute_h_device(self, a: Any, b: Any, c: Any, log_n: int) -> None:
        """The 7 NTTs and the quotient on device buffers; H's coefficients end up in `a`."""
        n = 1 << log_n
        for buf in (a, b, c):
            self.transform(buf, log_n, inverse=True, coset=False)
            self.transform(buf, log_n, inverse=False, coset=True)
        z = (pow(COSET_GENERATOR, n, R_MOD) - 1) % R_MOD
        z_inv = self._const(("zinv", log_n), pow(z, -1, R_MOD))
        self.ops.launch("ntt_h_pointwise_kernel", n, a, b, c, z_inv, n)
        self.transform(a, log_n, inverse=True, coset=True)


    def compute_h_odd_coset(self, a: Sequence[int], b: Sequence[int], c: Sequence[int]) -> list[int]:
        """snarkjs's H (a*b - c on the odd coset of the double domain), all on device."""
        if not len(a) == len(b) == len(c):
            raise ValueError(f"compute_h_odd_coset needs equal lengths, got {len(a)}, {len(b)}, {len(c)}")
        log_n = limbs.log2_exact(len(a))
        memory.check_ntt(len(a), self.budget())
        bufs = [self._load(f"h:{name}", vals, log_n) for name, vals in (("a", a), ("b", b), ("c", c))]
        self.compute_h_odd_coset_device(bufs[0], bufs[1], bufs[2], log_n)
        return self._fetch(bufs[0], log_n)

    def compute_h_odd_coset_device(self, a: Any, b: Any, c: Any, log_n: int) -> None:
        """Six NTTs with ffjavascript's roots and the pointwise a*b - c; the result ends up in `a`.

        Per vector: inverse NTT (coefficients, times n), coefficient i times w_2n^i / n, forward
        NTT: the values at w_2n^(2i+1). No division: Z is constant on that coset and the zkey's
        H points carry its inverse (`field.reference_h_odd_coset` is the reference)."""
        n = 1 << log_n
        scales = self._odd_coset_scales(log_n)
        for buf in (a, b, c):
            self._radix2(buf, log_n, True, FFJS_ROOTS)
            self.ops.launch("fr_mul_vec_kernel", n, buf, scales, n)
            self._radix2(buf, log_n, False, FFJS_ROOTS)
        self.ops.launch("ntt_h_odd_pointwise_kernel", n, a, b, c, n)


class MsmPlan:
    """Pippenger G1 MSM; bases stay on the device under their key (proving-key vectors) while the
    worker's byte budget allows, least recently used first out. `split` cuts hot buckets in chunks
    (see msm.cuh); without it one thread sums each bucket (kept for the bench's before/after)."""

    def __init__(self, ops: KernelOps, *, window: int | None = None, split: bool = True,
                 budget: Budget | None = None) -> None:
        self.ops = ops
        self.window = window
        self.split = split
        self.budget = budget or (lambda: None)
        self._bases: dict[str, tuple[Any, int]] = {}
        self.last_layout: MsmLayout | None = None

    def forget(self) -> None:
        """Drop the cached bases (after their buffers were freed)."""
        self._bases.clear()

    def cached_bytes(self, keep: str | None = None) -> int:
        return sum(n * AFFINE_BYTES for key, (_, n) in self._bases.items() if key != keep)

    def _evict(self, key: str) -> None:
        del self._bases[key]
        release = getattr(self.ops, "release", None)
        if release is not None:
            release(f"bases:{key}")

    def plan(self, n: int, key: str | None = None) -> MsmLayout:
        """The layout for an MSM of n points with bases `key`, evicting other cached bases (least
        recently used first) until it fits the budget; DeviceError when it cannot."""
        budget = self.budget()
        cached = key is not None and key in self._bases and self._bases[key][1] == n
        bases_bytes = n * AFFINE_BYTES  # resident either way while the MSM runs
        while True:
            try:
                return memory.plan_msm(n, budget, cached_bytes=self.cached_bytes(keep=key if cached else None),
                                       window=self.window, split=self.split, bases_bytes=bases_bytes)
            except memory.DeviceError as exc:
                others = [k for k in self._bases if k != key]
                if not exc.out_of_memory or not others:
                    raise
                self._evict(others[0])

    def load_bases(self, points: Sequence[Any] | np.ndarray, key: str | None) -> Any:
        """Upload affine bases (G1Points, or limbs packed by `limbs.pack_g1_affine`)."""
        n = points.size // 24 if isinstance(points, np.ndarray) else len(points)
        if key is not None and key in self._bases and self._bases[key][1] == n:
            self._bases[key] = self._bases.pop(key)  # most recently used last
            return self._bases[key][0]
        self.plan(n, key)  # room for these bases next to the working set, or a clear refusal
        tag = f"bases:{key}" if key is not None else "bases:-"
        buf = self.ops.buffer(tag, n * AFFINE_BYTES)
        self.ops.upload(buf, points if isinstance(points, np.ndarray) else limbs.pack_g1_affine(points))
        self.ops.launch("fp_to_mont_kernel", 2 * n, buf, 2 * n)
        if key is not None:
            self._bases.pop(key, None)
            self._bases[key] = (buf, n)
        return buf

    def _scan(self, data: Any, count: int, depth: int = 0) -> None:
        """Exclusive prefix sum in place: per-block scans, then the scanned block totals added."""
        nblocks = -(-count // SCAN_BLOCK)
        sums = self.ops.buffer(f"msm:scan{depth}", max(1, nblocks) * 4)
        self.ops.launch("scan_block_kernel", nblocks * SCAN_BLOCK, data, sums, count, block=SCAN_BLOCK)
        if nblocks > 1:
            self._scan(sums, nblocks, depth + 1)
            self.ops.launch("scan_add_kernel", nblocks * SCAN_BLOCK, data, sums, count, block=SCAN_BLOCK)

    def msm(self, bases: Any, n: int, scalars: Sequence[int] | np.ndarray, *, key: str | None = None) -> np.ndarray:
        """sum scalars[i] * bases[i]; returns the XYZZ result in Montgomery form (48 u32).

        `scalars` are canonical ints, or their limbs already packed by `limbs.pack_fr`."""
        count = scalars.size // 8 if isinstance(scalars, np.ndarray) else len(scalars)
        if count != n:
            raise ValueError(f"msm_g1 got {n} points and {count} scalars")
        ops = self.ops
        result = ops.buffer("msm:out", XYZZ_BYTES)
        if n == 0:
            ops.zero(result, XYZZ_BYTES)
            return ops.download(result, XYZZ_BYTES)
        lay = self.plan(n, key)
        self.last_layout = lay
        c, nwin, nbuckets, total = lay.c, lay.nwin, lay.nbuckets, lay.total
        log_seg, nseg = lay.log_seg, lay.nseg

        sc = ops.buffer("msm:scalars", n * FR_BYTES)
        ops.upload(sc, scalars if isinstance(scalars, np.ndarray) else limbs.pack_fr(scalars))
        keys = ops.buffer("msm:keys", total * 4)
        counts = ops.buffer("msm:counts", nbuckets * 4)
        offsets = ops.buffer("msm:offsets", nbuckets * 4)
        cursor = ops.buffer("msm:cursor", nbuckets * 4)
        sorted_idx = ops.buffer("msm:sorted", total * 4)
        buckets = ops.buffer("msm:buckets", nbuckets * XYZZ_BYTES)
        seg = ops.buffer("msm:seg", nseg * XYZZ_BYTES)

        ops.launch("msm_keys_kernel", total, sc, n, c, keys, total)
        ops.zero(counts, nbuckets * 4)
        ops.launch("msm_histogram_kernel", total, keys, counts, total)
        ops.copy(offsets, counts, nbuckets * 4)
        self._scan(offsets, nbuckets)
        ops.copy(cursor, offsets, nbuckets * 4)
        ops.launch("msm_scatter_kernel", total, keys, cursor, sorted_idx, n, total)
        if self.split:
            self._split_buckets(lay, bases, sorted_idx, offsets, counts, buckets)
        else:
            ops.launch("msm_bucket_kernel", nbuckets, bases, sorted_idx, offsets, counts, c, buckets, nbuckets)
        ops.launch("msm_segment_kernel", nseg, buckets, c, log_seg, seg, nseg)
        half = (1 << log_seg) // 2
        while half >= 1:
            ops.launch("msm_reduce_kernel", nwin * half, seg, log_seg, half, nwin * half)
            half //= 2
        ops.launch("msm_combine_kernel", 1, seg, nwin, log_seg, c, result)
        return ops.download(result, XYZZ_BYTES)

    def _split_buckets(self, lay: MsmLayout, bases: Any, sorted_idx: Any, offsets: Any, counts: Any,
                       buckets: Any) -> None:
        """Bucket sums from chunks of at most 2^log_chunk points: chunk counts, their scan, one thread
        per chunk, a tree per bucket over its chunk sums, then each bucket takes its root."""
        ops, nbuckets, nslots = self.ops, lay.nbuckets, lay.nslots
        chunks = ops.buffer("msm:chunks", nbuckets * 4)
        chunk_off = ops.buffer("msm:chunk_off", nbuckets * 4)
        owner = ops.buffer("msm:owner", nslots * 4)
        partial = ops.buffer("msm:partial", nslots * XYZZ_BYTES)
        ops.launch("msm_chunk_count_kernel", nbuckets, counts, lay.c, lay.log_chunk, chunks, nbuckets)
        ops.copy(chunk_off, chunks, nbuckets * 4)
        self._scan(chunk_off, nbuckets)
        ops.launch("msm_chunk_sum_kernel", nslots, bases, sorted_idx, offsets, counts, chunk_off, chunks,
                   lay.log_chunk, nbuckets, partial, owner, nslots)
        for level in range(lay.tree_levels):
            ops.launch("msm_chunk_reduce_kernel", nslots, partial, owner, chunk_off, chunks, level, nslots)
        ops.launch("msm_bucket_gather_kernel", nbuckets, partial, chunk_off, chunks, buckets, nbuckets)

    def bucket_counts(self) -> np.ndarray:
        """The last MSM's points per bucket (for the bench's hot-bucket figures)."""
        lay = self.last_layout
        if lay is None:
            raise ValueError("no MSM has run yet")
        return self.ops.download(self.ops.buffer("msm:counts", lay.nbuckets * 4), lay.nbuckets * 4)

    def msm_g1(self, points: Sequence[Any], scalars: Sequence[int], *, bases_key: str | None = None):
        """The backend-facing MSM: arkworks points and canonical ints in, a G1Point out."""
        if len(points) != len(scalars):
            raise ValueError(f"msm_g1 got {len(points)} points and {len(scalars)} scalars")
        if not points:
            return limbs.g1_from_affine(None)
        bases = self.load_bases(points, bases_key)
        return limbs.g1_from_affine(limbs.xyzz_mont_to_affine(self.msm(bases, len(points), scalars, key=bases_key)))


def bucket_work(counts: np.ndarray, c: int, log_chunk: int) -> dict[str, float]:
    """How the last MSM's bucket additions were spread: the largest bucket's share of them (what one
    thread added in sequence before splitting) and the largest chunk's share (after), plus the
    longest chain after splitting (chunk, then the tree levels of the biggest bucket)."""
    counts = np.asarray(counts, dtype=np.int64).copy()
    counts[:: 1 << c] = 0  # digit-0 buckets: no work
    total = int(counts.sum())
    if total == 0:
        return {"additions": 0, "largest_bucket": 0, "largest_bucket_share": 0.0, "largest_chunk_share": 0.0,
                "longest_chain": 0}
    largest = int(counts.max())
    chunk = min(largest, 1 << log_chunk)
    levels = (-(-largest >> log_chunk) - 1).bit_length()
    return {"additions": total, "largest_bucket": largest, "largest_bucket_share": largest / total,
            "largest_chunk_share": chunk / total,
            "longest_chain": chunk + levels}
