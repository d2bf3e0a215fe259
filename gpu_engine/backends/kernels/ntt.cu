// NTT kernels over Fr. Compiled by PyCUDA with no_extern_c=True, hence the explicit
// extern "C" on every kernel. Launched by gpu_engine/backends/device_plan.py's recipes.
#include "ntt.cuh"

#define VM_TID (blockIdx.x * blockDim.x + threadIdx.x)

extern "C" __global__ void fr_to_mont_kernel(fr_t* a, uint32_t n) {
    uint32_t i = VM_TID;
    if (i < n) a[i] = fr_to_mont(a[i]);
}

extern "C" __global__ void fr_from_mont_kernel(fr_t* a, uint32_t n) {
    uint32_t i = VM_TID;
    if (i < n) a[i] = fr_from_mont(a[i]);
}

extern "C" __global__ void ntt_bitrev_kernel(fr_t* a, uint32_t log_n, uint32_t n) {
    uint32_t i = VM_TID;
    if (i < n) ntt_bitrev_one(a, log_n, i);
}

extern "C" __global__ void ntt_butterfly_kernel(fr_t* a, const fr_t* tw, uint32_t log_n, uint32_t log_half,
                                                uint32_t n_half) {
    uint32_t i = VM_TID;
    if (i < n_half) ntt_butterfly_one(a, tw, log_n, log_half, i);
}

extern "C" __global__ void fr_powers_kernel(fr_t* out, const fr_t* base_pows, uint32_t nbits, uint32_t n) {
    uint32_t i = VM_TID;
    if (i < n) fr_powers_one(out, base_pows, nbits, i);
}

extern "C" __global__ void fr_mul_vec_kernel(fr_t* a, const fr_t* b, uint32_t n) {
    uint32_t i = VM_TID;
    if (i < n) a[i] = fr_mul(a[i], b[i]);
}

extern "C" __global__ void fr_scale_kernel(fr_t* a, const fr_t* s, uint32_t n) {
    uint32_t i = VM_TID;
    if (i < n) a[i] = fr_mul(a[i], *s);
}

extern "C" __global__ void ntt_h_pointwise_kernel(fr_t* a, const fr_t* b, const fr_t* c, const fr_t* z_inv,
                                                  uint32_t n) {
    uint32_t i = VM_TID;
    if (i < n) ntt_h_pointwise_one(a, b, c, z_inv, i);
}

extern "C" __global__ void ntt_h_odd_pointwise_kernel(fr_t* a, const fr_t* b, const fr_t* c, uint32_t n) {
    uint32_t i = VM_TID;
    if (i < n) ntt_h_odd_pointwise_one(a, b, c, i);
}
