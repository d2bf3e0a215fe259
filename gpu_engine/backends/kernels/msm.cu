// Pippenger G1 MSM kernels; the launch order is in gpu_engine/backends/device_plan.py.
// Compiled by PyCUDA with no_extern_c=True, hence the explicit extern "C".
#include "msm.cuh"

#define VM_TID (blockIdx.x * blockDim.x + threadIdx.x)
#define VM_SCAN_BLOCK 1024

// Affine bases arrive as canonical little-endian limbs; coordinates go to Montgomery form.
extern "C" __global__ void fp_to_mont_kernel(fp_t* a, uint32_t n) {
    uint32_t i = VM_TID;
    if (i < n) a[i] = fp_to_mont(a[i]);
}

extern "C" __global__ void msm_keys_kernel(const uint32_t* scalars, uint32_t n, uint32_t c, uint32_t* keys,
                                           uint32_t total) {
    uint32_t t = VM_TID;
    if (t < total) msm_key_one(scalars, n, c, keys, t);
}

extern "C" __global__ void msm_histogram_kernel(const uint32_t* keys, uint32_t* counts, uint32_t total) {
    uint32_t t = VM_TID;
    if (t < total) atomicAdd(&counts[keys[t]], 1u);
}

// Exclusive scan of each block of VM_SCAN_BLOCK entries in place; block totals to sums.
extern "C" __global__ void scan_block_kernel(uint32_t* data, uint32_t* sums, uint32_t n) {
    __shared__ uint32_t buf[2][VM_SCAN_BLOCK];
    uint32_t tid = threadIdx.x;
    uint32_t i = blockIdx.x * VM_SCAN_BLOCK + tid;
    uint32_t own = i < n ? data[i] : 0u;
    int cur = 0;
    buf[0][tid] = own;
    __syncthreads();
    for (uint32_t step = 1; step < VM_SCAN_BLOCK; step <<= 1) {
        uint32_t v = buf[cur][tid];
        if (tid >= step) v += buf[cur][tid - step];
        buf[cur ^ 1][tid] = v;
        cur ^= 1;
        __syncthreads();
    }
    uint32_t incl = buf[cur][tid];
    if (i < n) data[i] = incl - own;
    if (tid == VM_SCAN_BLOCK - 1) sums[blockIdx.x] = incl;
}

extern "C" __global__ void scan_add_kernel(uint32_t* data, const uint32_t* sums, uint32_t n) {
    uint32_t i = blockIdx.x * VM_SCAN_BLOCK + threadIdx.x;
    if (i < n) data[i] += sums[blockIdx.x];
}

// cursor starts as a copy of the offsets; the order inside a bucket does not matter.
extern "C" __global__ void msm_scatter_kernel(const uint32_t* keys, uint32_t* cursor, uint32_t* sorted, uint32_t n,
                                              uint32_t total) {
    uint32_t t = VM_TID;
    if (t < total) {
        uint32_t pos = atomicAdd(&cursor[keys[t]], 1u);
        sorted[pos] = t % n;
    }
}

extern "C" __global__ void msm_bucket_kernel(const g1_affine* bases, const uint32_t* sorted, const uint32_t* offsets,
                                             const uint32_t* counts, uint32_t c, g1_xyzz* buckets, uint32_t nbuckets) {
    uint32_t b = VM_TID;
    if (b < nbuckets) msm_bucket_one(bases, sorted, offsets, counts, c, buckets, b);
}

extern "C" __global__ void msm_chunk_count_kernel(const uint32_t* counts, uint32_t c, uint32_t log_chunk,
                                                  uint32_t* chunks, uint32_t nbuckets) {
    uint32_t b = VM_TID;
    if (b < nbuckets) chunks[b] = msm_chunk_count_one(counts, c, log_chunk, b);
}

extern "C" __global__ void msm_chunk_sum_kernel(const g1_affine* bases, const uint32_t* sorted,
                                                const uint32_t* offsets, const uint32_t* counts,
                                                const uint32_t* chunk_off, const uint32_t* chunks, uint32_t log_chunk,
                                                uint32_t nbuckets, g1_xyzz* partial, uint32_t* owner,
                                                uint32_t nslots) {
    uint32_t t = VM_TID;
    if (t < nslots) msm_chunk_sum_one(bases, sorted, offsets, counts, chunk_off, chunks, log_chunk, nbuckets, partial,
                                      owner, t);
}

extern "C" __global__ void msm_chunk_reduce_kernel(g1_xyzz* partial, const uint32_t* owner, const uint32_t* chunk_off,
                                                   const uint32_t* chunks, uint32_t level, uint32_t nslots) {
    uint32_t t = VM_TID;
    if (t < nslots) msm_chunk_reduce_one(partial, owner, chunk_off, chunks, level, t);
}

extern "C" __global__ void msm_bucket_gather_kernel(const g1_xyzz* partial, const uint32_t* chunk_off,
                                                    const uint32_t* chunks, g1_xyzz* buckets, uint32_t nbuckets) {
    uint32_t b = VM_TID;
    if (b < nbuckets) msm_bucket_gather_one(partial, chunk_off, chunks, buckets, b);
}

extern "C" __global__ void msm_segment_kernel(const g1_xyzz* buckets, uint32_t c, uint32_t log_seg, g1_xyzz* seg,
                                              uint32_t nseg) {
    uint32_t t = VM_TID;
    if (t < nseg) msm_segment_one(buckets, c, log_seg, seg, t);
}

extern "C" __global__ void msm_reduce_kernel(g1_xyzz* seg, uint32_t log_seg, uint32_t half, uint32_t total) {
    uint32_t t = VM_TID;
    if (t < total) msm_reduce_one(seg, log_seg, half, t);
}

extern "C" __global__ void msm_combine_kernel(const g1_xyzz* seg, uint32_t nwin, uint32_t log_seg, uint32_t c,
                                              g1_xyzz* out) {
    if (VM_TID == 0) *out = msm_combine(seg, nwin, log_seg, c);
}
