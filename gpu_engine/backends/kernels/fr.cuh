// Fr, the BLS12-381 scalar field: 8 x 32-bit limbs, Montgomery form (R = 2^256).
#pragma once
#include "vm_common.cuh"

struct fr_t {
    uint32_t v[8];
};

VM_CONSTS(FR_MOD, 8, 0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u, 0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u)
VM_CONSTS(FR_R2, 8, 0xf3f29c6du, 0xc999e990u, 0x87925c23u, 0x2b6cedcbu, 0x7254398fu, 0x05d31496u, 0x9f59ff11u, 0x0748d9d9u)
VM_CONSTS(FR_MONT_ONE, 8, 0xfffffffeu, 0x00000001u, 0x00034802u, 0x5884b7fau, 0xecbc4ff5u, 0x998c4fefu, 0xacc5056fu, 0x1824b159u)
#define FR_INV 0xffffffffu

VM_HD fr_t fr_zero() {
    fr_t r;
    VM_UNROLL
    for (int i = 0; i < 8; i++) r.v[i] = 0;
    return r;
}

VM_HD fr_t fr_one() {
    fr_t r;
    VM_UNROLL
    for (int i = 0; i < 8; i++) r.v[i] = VM_C(FR_MONT_ONE)[i];
    return r;
}

VM_HD fr_t fr_add(const fr_t& a, const fr_t& b) {
    fr_t r;
    mp_add_mod<8>(r.v, a.v, b.v, VM_C(FR_MOD));
    return r;
}

VM_HD fr_t fr_sub(const fr_t& a, const fr_t& b) {
    fr_t r;
    mp_sub_mod<8>(r.v, a.v, b.v, VM_C(FR_MOD));
    return r;
}

VM_HD fr_t fr_mul(const fr_t& a, const fr_t& b) {
    fr_t r;
    mp_mont_mul<8>(r.v, a.v, b.v, VM_C(FR_MOD), FR_INV);
    return r;
}

// canonical -> Montgomery: a * R^2 / R.
VM_HD fr_t fr_to_mont(const fr_t& a) {
    fr_t r;
    mp_mont_mul<8>(r.v, a.v, VM_C(FR_R2), VM_C(FR_MOD), FR_INV);
    return r;
}

// Montgomery -> canonical: a * 1 / R.
VM_HD fr_t fr_from_mont(const fr_t& a) {
    fr_t one = fr_zero();
    one.v[0] = 1;
    fr_t r;
    mp_mont_mul<8>(r.v, a.v, one.v, VM_C(FR_MOD), FR_INV);
    return r;
}
