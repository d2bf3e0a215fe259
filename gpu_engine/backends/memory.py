"""Device memory planned in bytes: what an MSM or an H computation needs before anything is allocated.

At Filecoin sizes a G1 MSM of 2^27 points at 16-bit windows wants tens of GiB of working
buffers; several workers share a device. So every plan is sized here first, against the share
of the device's free memory that one worker may use (`Budget`): it takes the window width the
engine prefers when it fits, a narrower or wider one when that fits instead, and otherwise
refuses with a `DeviceError` that says how much was needed and how much there was. Sizes whose
32-bit thread and key indices would wrap (nwin * n >= 2^32) are refused up front too.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpu_engine.backends.errors import DeviceError

FR_BYTES = 32
AFFINE_BYTES = 96
XYZZ_BYTES = 192
SCAN_BLOCK = 1024
SEGMENT_LEN_LOG = 4
INDEX_LIMIT = 2**32
MIN_WINDOW, MAX_WINDOW = 4, 16
GIB = 2**30


def window_bits(n: int) -> int:
    """Pippenger window width the engine prefers: about log2(n) - 4 bits, between 4 and 16."""
    return max(MIN_WINDOW, min(MAX_WINDOW, n.bit_length() - 5))


def chunk_log(n: int, c: int) -> int:
    """log2 of the hot-bucket chunk: about twice a bucket's average share (n / 2^c), at least 8."""
    return max(3, min(12, (n >> c).bit_length()))


@dataclass(frozen=True)
class MsmLayout:
    """Sizes of one MSM's device buffers (bases excluded: they may be cached)."""

    n: int
    c: int
    split: bool = True

    @property
    def nwin(self) -> int:
        return -(-255 // self.c)

    @property
    def nbuckets(self) -> int:
        return self.nwin << self.c

    @property
    def total(self) -> int:
        return self.nwin * self.n

    @property
    def log_seg(self) -> int:
        return max(0, self.c - SEGMENT_LEN_LOG)

    @property
    def nseg(self) -> int:
        return self.nwin << self.log_seg

    @property
    def log_chunk(self) -> int:
        return chunk_log(self.n, self.c)

    @property
    def nslots(self) -> int:
        """Chunk slots: every non-empty bucket rounds up by at most one chunk."""
        return -(-self.total >> self.log_chunk) + self.nbuckets if self.split else 0

    @property
    def tree_levels(self) -> int:
        """Levels of the per-bucket tree: a bucket holds at most n points, so ceil(n / chunk) chunks."""
        return max(0, (-(-self.n >> self.log_chunk) - 1).bit_length()) if self.split else 0

    def scan_bytes(self, count: int) -> int:
        out = 0
        while True:
            blocks = max(1, -(-count // SCAN_BLOCK))
            out += blocks * 4
            if blocks == 1:
                return out
            count = blocks

    @property
    def bytes(self) -> int:
        total = self.n * FR_BYTES + 2 * self.total * 4 + 3 * self.nbuckets * 4 + self.scan_bytes(self.nbuckets)
        total += (self.nbuckets + self.nseg + 1) * XYZZ_BYTES
        if self.split:
            total += 2 * self.nbuckets * 4 + self.nslots * (4 + XYZZ_BYTES)
        return total

    def check_indices(self) -> None:
        """32-bit indices of the kernels: thread t < nwin*n, keys and sorted entries, chunk slots."""
        largest = max(self.total, self.nslots, 2 * self.n)
        if largest >= INDEX_LIMIT:
            raise DeviceError(
                f"an MSM of {self.n} points at {self.c}-bit windows needs {largest} 32-bit indices "
                f"(>= 2^32): the kernels cannot address it; split the MSM below {INDEX_LIMIT // self.nwin} points")


def ntt_bytes(n: int) -> int:
    """compute_h and the odd-coset H: three vectors of n, plus tables (twiddles, cosets, scales)."""
    return 3 * n * FR_BYTES + (n // 2 + 2 * n + n) * FR_BYTES + 64 * FR_BYTES


Budget = Callable[[], int | None]  # bytes one worker may hold now; None = unlimited (host emulation)


def plan_msm(n: int, budget: int | None, *, cached_bytes: int = 0, window: int | None = None,
             split: bool = True, bases_bytes: int = 0) -> MsmLayout:
    """The layout to run: the fixed `window` or the preferred one, else the cheapest window that fits
    `budget` after `cached_bytes` (bases kept for other keys) and `bases_bytes` (this MSM's bases, if
    they must be uploaded). DeviceError when none does or when the indices would wrap."""
    preferred = window or window_bits(n)
    candidates = [preferred] if window else sorted(range(MIN_WINDOW, MAX_WINDOW + 1),
                                                   key=lambda c: (c != preferred, MsmLayout(n, c, split).bytes))
    errors: list[DeviceError] = []
    for c in candidates:
        layout = MsmLayout(n, c, split)
        try:
            layout.check_indices()
        except DeviceError as exc:
            errors.append(exc)
            continue
        if budget is None or layout.bytes + bases_bytes + cached_bytes <= budget:
            return layout
    if errors and len(errors) == len(candidates):
        raise errors[0]
    best = min((MsmLayout(n, c, split) for c in candidates), key=lambda lay: lay.bytes)
    raise DeviceError(
        f"an MSM of {n} points needs {(best.bytes + bases_bytes) / GIB:.2f} GiB of device memory at best "
        f"({best.c}-bit windows), this worker may use {(budget or 0) / GIB:.2f} GiB "
        f"({cached_bytes / GIB:.2f} GiB of it held by cached bases)", out_of_memory=True)


def check_ntt(n: int, budget: int | None) -> None:
    if budget is not None and ntt_bytes(n) > budget:
        raise DeviceError(f"an H computation over {n} points needs {ntt_bytes(n) / GIB:.2f} GiB of device memory, "
                          f"this worker may use {budget / GIB:.2f} GiB", out_of_memory=True)
