// Per-element steps of the radix-2 NTT over Fr, shared by the kernels (one thread per
// element or butterfly) and the host emulation (a loop over the same indices).
// Values are in Montgomery form. Forward transform: bit-reversal permutation, then
// log2(n) decimation-in-time stages, natural order in and out.
#pragma once
#include "fr.cuh"

VM_HD uint32_t vm_bit_reverse(uint32_t x, uint32_t log_n) {
    if (log_n == 0) return 0;
#ifdef __CUDA_ARCH__
    return __brev(x) >> (32 - log_n);
#else
    uint32_t r = 0;
    for (uint32_t i = 0; i < log_n; i++) {
        r = (r << 1) | (x & 1u);
        x >>= 1;
    }
    return r;
#endif
}

// Swap a[i] with a[rev(i)] once per pair.
VM_HD void ntt_bitrev_one(fr_t* a, uint32_t log_n, uint32_t i) {
    uint32_t j = vm_bit_reverse(i, log_n);
    if (i < j) {
        fr_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

// Butterfly i (0 <= i < n/2) of the stage that joins blocks of size half = 2^log_half.
// tw[t] = omega^t for t < n/2; this stage's root is omega^(n / (2 half)).
VM_HD void ntt_butterfly_one(fr_t* a, const fr_t* tw, uint32_t log_n, uint32_t log_half, uint32_t i) {
    uint32_t half = 1u << log_half;
    uint32_t j = i & (half - 1u);
    uint32_t idx = ((i >> log_half) << (log_half + 1)) + j;
    fr_t w = tw[j << (log_n - log_half - 1)];
    fr_t u = a[idx];
    fr_t v = fr_mul(a[idx + half], w);
    a[idx] = fr_add(u, v);
    a[idx + half] = fr_sub(u, v);
}

// out[i] = b^i from base_pows[k] = b^(2^k), k < nbits (twiddles and coset powers,
// built on the device so no large table crosses the bus).
VM_HD void fr_powers_one(fr_t* out, const fr_t* base_pows, uint32_t nbits, uint32_t i) {
    fr_t acc = fr_one();
    for (uint32_t k = 0; k < nbits; k++) {
        if ((i >> k) & 1u) acc = fr_mul(acc, base_pows[k]);
    }
    out[i] = acc;
}

// The quotient step of Groth16: on the coset, H = (A*B - C) * Z^-1 with Z constant there.
VM_HD void ntt_h_pointwise_one(fr_t* a, const fr_t* b, const fr_t* c, const fr_t* z_inv, uint32_t i) {
    a[i] = fr_mul(fr_sub(fr_mul(a[i], b[i]), c[i]), *z_inv);
}

// snarkjs's H on the odd coset: a*b - c, no division (the circom key's H points carry 1/Z).
VM_HD void ntt_h_odd_pointwise_one(fr_t* a, const fr_t* b, const fr_t* c, uint32_t i) {
    a[i] = fr_sub(fr_mul(a[i], b[i]), c[i]);
}
