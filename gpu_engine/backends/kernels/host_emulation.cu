// Host build of the kernels' per-element code, for checking it on machines without a GPU.
// Built as C++ (g++, or nvcc -x cu) into a shared library by gpu_engine/backends/emulation.py.
// Every function named *_kernel has the signature of the device kernel of the same name
// and runs its body for every thread index in turn; the counting sort's atomics become
// plain increments. The fr_/fp_/g1_ entry points expose single operations to the tests.
#include "ntt.cuh"
#include "msm.cuh"

#define VM_EXPORT extern "C" __attribute__((visibility("default")))
#define VM_SCAN_BLOCK 1024

// Out-of-range accesses the host kernels caught (a GPU would fault or read garbage); the
// emulation reads and clears the count after every launch.
static uint32_t vm_faults = 0;

VM_EXPORT uint32_t vm_take_faults(void) {
    uint32_t n = vm_faults;
    vm_faults = 0;
    return n;
}

// ---- field and point operations, vectorised over n elements ----

VM_EXPORT void vm_fr_op(int op, const fr_t* a, const fr_t* b, fr_t* out, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        switch (op) {
            case 0: out[i] = fr_add(a[i], b[i]); break;
            case 1: out[i] = fr_sub(a[i], b[i]); break;
            case 2: out[i] = fr_mul(a[i], b[i]); break;
            case 3: out[i] = fr_to_mont(a[i]); break;
            default: out[i] = fr_from_mont(a[i]); break;
        }
    }
}

VM_EXPORT void vm_fp_op(int op, const fp_t* a, const fp_t* b, fp_t* out, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        switch (op) {
            case 0: out[i] = fp_add(a[i], b[i]); break;
            case 1: out[i] = fp_sub(a[i], b[i]); break;
            case 2: out[i] = fp_mul(a[i], b[i]); break;
            case 3: out[i] = fp_to_mont(a[i]); break;
            default: out[i] = fp_from_mont(a[i]); break;
        }
    }
}

// op 0: p + q, 1: p + affine(q), 2: 2p, 3: 2 affine(p), 4: k p (small k). Inputs in XYZZ
// (affine ones are the first two coordinates of the same record, with ZZ, ZZZ ignored).
VM_EXPORT void vm_g1_op(int op, const g1_xyzz* p, const g1_xyzz* q, uint32_t k, g1_xyzz* out) {
    g1_affine ap = {p->x, p->y};
    g1_affine aq = {q->x, q->y};
    switch (op) {
        case 0: *out = g1_add(*p, *q); break;
        case 1: *out = g1_add_affine(*p, aq); break;
        case 2: *out = g1_dbl(*p); break;
        case 3: *out = g1_dbl_affine(ap); break;
        default: *out = g1_mul_small(*p, k); break;
    }
}

// ---- NTT kernels ----

VM_EXPORT void fr_to_mont_kernel(fr_t* a, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) a[i] = fr_to_mont(a[i]);
}

VM_EXPORT void fr_from_mont_kernel(fr_t* a, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) a[i] = fr_from_mont(a[i]);
}

VM_EXPORT void ntt_bitrev_kernel(fr_t* a, uint32_t log_n, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) ntt_bitrev_one(a, log_n, i);
}

VM_EXPORT void ntt_butterfly_kernel(fr_t* a, const fr_t* tw, uint32_t log_n, uint32_t log_half, uint32_t n_half) {
    for (uint32_t i = 0; i < n_half; i++) ntt_butterfly_one(a, tw, log_n, log_half, i);
}

VM_EXPORT void fr_powers_kernel(fr_t* out, const fr_t* base_pows, uint32_t nbits, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) fr_powers_one(out, base_pows, nbits, i);
}

VM_EXPORT void fr_mul_vec_kernel(fr_t* a, const fr_t* b, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) a[i] = fr_mul(a[i], b[i]);
}

VM_EXPORT void fr_scale_kernel(fr_t* a, const fr_t* s, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) a[i] = fr_mul(a[i], *s);
}

VM_EXPORT void ntt_h_pointwise_kernel(fr_t* a, const fr_t* b, const fr_t* c, const fr_t* z_inv, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) ntt_h_pointwise_one(a, b, c, z_inv, i);
}

VM_EXPORT void ntt_h_odd_pointwise_kernel(fr_t* a, const fr_t* b, const fr_t* c, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) ntt_h_odd_pointwise_one(a, b, c, i);
}

// ---- MSM kernels ----

VM_EXPORT void fp_to_mont_kernel(fp_t* a, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) a[i] = fp_to_mont(a[i]);
}

VM_EXPORT void msm_keys_kernel(const uint32_t* scalars, uint32_t n, uint32_t c, uint32_t* keys, uint32_t total) {
    for (uint32_t t = 0; t < total; t++) msm_key_one(scalars, n, c, keys, t);
}

VM_EXPORT void msm_histogram_kernel(const uint32_t* keys, uint32_t* counts, uint32_t total) {
    for (uint32_t t = 0; t < total; t++) counts[keys[t]] += 1u;  // keys < nbuckets: msm_key_one
}

VM_EXPORT void scan_block_kernel(uint32_t* data, uint32_t* sums, uint32_t n) {
    uint32_t nblocks = (n + VM_SCAN_BLOCK - 1) / VM_SCAN_BLOCK;
    for (uint32_t blk = 0; blk < nblocks; blk++) {
        uint32_t acc = 0;
        for (uint32_t k = 0; k < VM_SCAN_BLOCK; k++) {
            uint32_t i = blk * VM_SCAN_BLOCK + k;
            uint32_t own = i < n ? data[i] : 0u;
            if (i < n) data[i] = acc;
            acc += own;
        }
        sums[blk] = acc;
    }
}

VM_EXPORT void scan_add_kernel(uint32_t* data, const uint32_t* sums, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) data[i] += sums[i / VM_SCAN_BLOCK];
}

VM_EXPORT void msm_scatter_kernel(const uint32_t* keys, uint32_t* cursor, uint32_t* sorted, uint32_t n,
                                  uint32_t total) {
    for (uint32_t t = 0; t < total; t++) {
        uint32_t pos = cursor[keys[t]]++;
        if (pos >= total) {  // offsets from counts that were never zeroed
            vm_faults++;
            continue;
        }
        sorted[pos] = t % n;
    }
}

VM_EXPORT void msm_bucket_kernel(const g1_affine* bases, const uint32_t* sorted, const uint32_t* offsets,
                                 const uint32_t* counts, uint32_t c, g1_xyzz* buckets, uint32_t nbuckets) {
    for (uint32_t b = 0; b < nbuckets; b++) msm_bucket_one(bases, sorted, offsets, counts, c, buckets, b);
}

VM_EXPORT void msm_chunk_count_kernel(const uint32_t* counts, uint32_t c, uint32_t log_chunk, uint32_t* chunks,
                                      uint32_t nbuckets) {
    for (uint32_t b = 0; b < nbuckets; b++) chunks[b] = msm_chunk_count_one(counts, c, log_chunk, b);
}

VM_EXPORT void msm_chunk_sum_kernel(const g1_affine* bases, const uint32_t* sorted, const uint32_t* offsets,
                                    const uint32_t* counts, const uint32_t* chunk_off, const uint32_t* chunks,
                                    uint32_t log_chunk, uint32_t nbuckets, g1_xyzz* partial, uint32_t* owner,
                                    uint32_t nslots) {
    uint32_t used = chunk_off[nbuckets - 1] + chunks[nbuckets - 1];
    if (used > nslots) vm_faults++;  // more chunks than the slots the recipe planned
    for (uint32_t t = 0; t < nslots; t++)
        msm_chunk_sum_one(bases, sorted, offsets, counts, chunk_off, chunks, log_chunk, nbuckets, partial, owner, t);
}

VM_EXPORT void msm_chunk_reduce_kernel(g1_xyzz* partial, const uint32_t* owner, const uint32_t* chunk_off,
                                       const uint32_t* chunks, uint32_t level, uint32_t nslots) {
    for (uint32_t t = 0; t < nslots; t++) {
        uint32_t b = owner[t];
        if (b != VM_NO_OWNER && t - chunk_off[b] + (1u << level) < chunks[b] && t + (1u << level) >= nslots)
            vm_faults++;  // the tree would read past the planned slots
        else
            msm_chunk_reduce_one(partial, owner, chunk_off, chunks, level, t);
    }
}

VM_EXPORT void msm_bucket_gather_kernel(const g1_xyzz* partial, const uint32_t* chunk_off, const uint32_t* chunks,
                                        g1_xyzz* buckets, uint32_t nbuckets) {
    for (uint32_t b = 0; b < nbuckets; b++) msm_bucket_gather_one(partial, chunk_off, chunks, buckets, b);
}

VM_EXPORT void msm_segment_kernel(const g1_xyzz* buckets, uint32_t c, uint32_t log_seg, g1_xyzz* seg,
                                  uint32_t nseg) {
    for (uint32_t t = 0; t < nseg; t++) msm_segment_one(buckets, c, log_seg, seg, t);
}

VM_EXPORT void msm_reduce_kernel(g1_xyzz* seg, uint32_t log_seg, uint32_t half, uint32_t total) {
    for (uint32_t t = 0; t < total; t++) msm_reduce_one(seg, log_seg, half, t);
}

VM_EXPORT void msm_combine_kernel(const g1_xyzz* seg, uint32_t nwin, uint32_t log_seg, uint32_t c, g1_xyzz* out) {
    *out = msm_combine(seg, nwin, log_seg, c);
}
