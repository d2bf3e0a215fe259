// Per-element steps of the Pippenger G1 MSM, shared by the kernels and the host emulation.
//
// Scalars are canonical (not Montgomery), 8 limbs. With window width c there are
// nwin = ceil(255 / c) windows; entry t = w * n + i of the key array is the bucket of
// point i in window w: key = (w << c) | digit. A counting sort (histogram, exclusive scan,
// scatter) groups point indices by key. A bucket's points are then cut into chunks of at most
// 2^log_chunk (hot buckets: witnesses full of 0 and 1 put most points in one digit), one thread
// sums each chunk, a tree per bucket adds its chunk sums, and the bucket takes the root.
// Each window's 2^c buckets are split into 2^log_seg segments; a segment's running sum
// gives sum(d * B_d) over its buckets, the segments are added by a tree reduction, and
// the window sums are combined by Horner's rule in 2^c.
#pragma once
#include "g1.cuh"

VM_HD uint32_t msm_digit(const uint32_t* scalar, uint32_t w, uint32_t c) {
    uint32_t bit = w * c;
    uint32_t limb = bit >> 5;
    uint32_t off = bit & 31u;
    if (limb >= 8) return 0;
    uint32_t d = scalar[limb] >> off;
    if (off + c > 32 && limb + 1 < 8) d |= scalar[limb + 1] << (32 - off);
    return d & ((1u << c) - 1u);
}

VM_HD void msm_key_one(const uint32_t* scalars, uint32_t n, uint32_t c, uint32_t* keys, uint32_t t) {
    uint32_t w = t / n;
    uint32_t i = t - w * n;
    keys[t] = (w << c) | msm_digit(scalars + 8 * i, w, c);
}

// Bucket b: the sum of the points whose index sits in sorted[offsets[b] .. + counts[b]).
// Digit 0 contributes nothing and its bucket is left at infinity.
VM_HD void msm_bucket_one(const g1_affine* bases, const uint32_t* sorted, const uint32_t* offsets,
                          const uint32_t* counts, uint32_t c, g1_xyzz* buckets, uint32_t b) {
    g1_xyzz acc = g1_inf();
    if ((b & ((1u << c) - 1u)) != 0) {
        uint32_t start = offsets[b];
        uint32_t end = start + counts[b];
        for (uint32_t k = start; k < end; k++) acc = g1_add_affine(acc, bases[sorted[k]]);
    }
    buckets[b] = acc;
}

// Segment s of window w (t = w * 2^log_seg + s): sum of d * B_d over its buckets d,
// from a running sum (top bucket down) plus (lo - 1) times the segment's plain sum.
VM_HD void msm_segment_one(const g1_xyzz* buckets, uint32_t c, uint32_t log_seg, g1_xyzz* seg_out, uint32_t t) {
    uint32_t w = t >> log_seg;
    uint32_t s = t & ((1u << log_seg) - 1u);
    uint32_t len = (1u << c) >> log_seg;
    uint32_t lo = s * len;
    uint32_t hi = lo + len;
    if (lo == 0) lo = 1;
    g1_xyzz running = g1_inf();
    g1_xyzz acc = g1_inf();
    for (uint32_t d = hi; d > lo; d--) {
        running = g1_add(running, buckets[(w << c) | (d - 1)]);
        acc = g1_add(acc, running);
    }
    if (lo > 1) acc = g1_add(acc, g1_mul_small(running, lo - 1));
    seg_out[t] = acc;
}

// One level of the per-window tree reduction: seg[w][i] += seg[w][i + half], t = w * half + i.
VM_HD void msm_reduce_one(g1_xyzz* seg, uint32_t log_seg, uint32_t half, uint32_t t) {
    uint32_t w = t / half;
    uint32_t i = t - w * half;
    uint32_t base = w << log_seg;
    seg[base + i] = g1_add(seg[base + i], seg[base + i + half]);
}

// sum_w 2^(c w) * window_w, where window w's sum sits at seg[w << log_seg].
VM_HD g1_xyzz msm_combine(const g1_xyzz* seg, uint32_t nwin, uint32_t log_seg, uint32_t c) {
    g1_xyzz acc = g1_inf();
    for (uint32_t w = nwin; w > 0; w--) {
        for (uint32_t k = 0; k < c; k++) acc = g1_dbl(acc);
        acc = g1_add(acc, seg[(w - 1) << log_seg]);
    }
    return acc;
}

// ---- hot-bucket splitting: chunks of at most 2^log_chunk points, one thread each ----

#define VM_NO_OWNER 0xFFFFFFFFu

// Chunks of bucket b; digit 0 contributes nothing and gets none.
VM_HD uint32_t msm_chunk_count_one(const uint32_t* counts, uint32_t c, uint32_t log_chunk, uint32_t b) {
    if ((b & ((1u << c) - 1u)) == 0) return 0;
    return (counts[b] + (1u << log_chunk) - 1u) >> log_chunk;
}

// The bucket whose chunks include slot t (chunk_off: exclusive scan of chunks), or VM_NO_OWNER
// past the last chunk. Binary search for the last b with chunk_off[b] <= t.
VM_HD uint32_t msm_slot_owner(const uint32_t* chunk_off, const uint32_t* chunks, uint32_t nbuckets, uint32_t t) {
    uint32_t lo = 0, hi = nbuckets;
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) >> 1;
        if (chunk_off[mid] <= t) lo = mid; else hi = mid;
    }
    return t >= chunk_off[lo] && t - chunk_off[lo] < chunks[lo] ? lo : VM_NO_OWNER;
}

// Slot t: the sum of its chunk's points; owner[t] records the bucket for the tree levels.
VM_HD void msm_chunk_sum_one(const g1_affine* bases, const uint32_t* sorted, const uint32_t* offsets,
                             const uint32_t* counts, const uint32_t* chunk_off, const uint32_t* chunks,
                             uint32_t log_chunk, uint32_t nbuckets, g1_xyzz* partial, uint32_t* owner, uint32_t t) {
    uint32_t b = msm_slot_owner(chunk_off, chunks, nbuckets, t);
    owner[t] = b;
    g1_xyzz acc = g1_inf();
    if (b != VM_NO_OWNER) {
        uint32_t start = offsets[b] + ((t - chunk_off[b]) << log_chunk);
        uint32_t end = offsets[b] + counts[b];
        if (end - start > (1u << log_chunk)) end = start + (1u << log_chunk);
        for (uint32_t k = start; k < end; k++) acc = g1_add_affine(acc, bases[sorted[k]]);
    }
    partial[t] = acc;
}

// Level `level` of each bucket's tree: its chunk j += chunk j + 2^level when j is a multiple of
// 2^(level+1). The slot read is never written in the same level, so threads do not race.
VM_HD void msm_chunk_reduce_one(g1_xyzz* partial, const uint32_t* owner, const uint32_t* chunk_off,
                                const uint32_t* chunks, uint32_t level, uint32_t t) {
    uint32_t b = owner[t];
    if (b == VM_NO_OWNER) return;
    uint32_t j = t - chunk_off[b];
    uint32_t step = 1u << level;
    if ((j & ((step << 1) - 1u)) == 0 && j + step < chunks[b]) partial[t] = g1_add(partial[t], partial[t + step]);
}

// Bucket b takes its tree's root (infinity when it has no chunk).
VM_HD void msm_bucket_gather_one(const g1_xyzz* partial, const uint32_t* chunk_off, const uint32_t* chunks,
                                 g1_xyzz* buckets, uint32_t b) {
    buckets[b] = chunks[b] ? partial[chunk_off[b]] : g1_inf();
}
