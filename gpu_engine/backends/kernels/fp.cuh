// Fp, the BLS12-381 base field: 12 x 32-bit limbs, Montgomery form (R = 2^384).
#pragma once
#include "vm_common.cuh"

struct fp_t {
    uint32_t v[12];
};

VM_CONSTS(FP_MOD, 12, 0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u, 0x6730d2a0u,
          0xf38512bfu, 0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau)
VM_CONSTS(FP_R2, 12, 0x1c341746u, 0xf4df1f34u, 0x09d104f1u, 0x0a76e6a6u, 0x4c95b6d5u, 0x8de5476cu,
          0x939d83c0u, 0x67eb88a9u, 0xb519952du, 0x9a793e85u, 0x92cae3aau, 0x11988fe5u)
VM_CONSTS(FP_MONT_ONE, 12, 0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu, 0x53c758bau, 0x5f489857u,
          0x70525745u, 0x77ce5853u, 0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u)
#define FP_INV 0xfffcfffdu

VM_HD fp_t fp_zero() {
    fp_t r;
    VM_UNROLL
    for (int i = 0; i < 12; i++) r.v[i] = 0;
    return r;
}

VM_HD fp_t fp_one() {
    fp_t r;
    VM_UNROLL
    for (int i = 0; i < 12; i++) r.v[i] = VM_C(FP_MONT_ONE)[i];
    return r;
}

VM_HD bool fp_is_zero(const fp_t& a) { return mp_is_zero<12>(a.v); }
VM_HD bool fp_eq(const fp_t& a, const fp_t& b) { return mp_eq<12>(a.v, b.v); }

VM_HD fp_t fp_add(const fp_t& a, const fp_t& b) {
    fp_t r;
    mp_add_mod<12>(r.v, a.v, b.v, VM_C(FP_MOD));
    return r;
}

VM_HD fp_t fp_sub(const fp_t& a, const fp_t& b) {
    fp_t r;
    mp_sub_mod<12>(r.v, a.v, b.v, VM_C(FP_MOD));
    return r;
}

VM_HD_CALL fp_t fp_mul(const fp_t& a, const fp_t& b) {
    fp_t r;
    mp_mont_mul<12>(r.v, a.v, b.v, VM_C(FP_MOD), FP_INV);
    return r;
}

VM_HD fp_t fp_sqr(const fp_t& a) { return fp_mul(a, a); }

VM_HD fp_t fp_to_mont(const fp_t& a) {
    fp_t r;
    mp_mont_mul<12>(r.v, a.v, VM_C(FP_R2), VM_C(FP_MOD), FP_INV);
    return r;
}

VM_HD fp_t fp_from_mont(const fp_t& a) {
    fp_t one = fp_zero();
    one.v[0] = 1;
    fp_t r;
    mp_mont_mul<12>(r.v, a.v, one.v, VM_C(FP_MOD), FP_INV);
    return r;
}
