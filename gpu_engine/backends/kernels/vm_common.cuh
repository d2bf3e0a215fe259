// Shared by every kernel and by the host emulation build.
// Field and point code is written once as VM_HD functions: under nvcc they are
// __host__ __device__, under a plain C++ compiler they are ordinary inline functions,
// so the same source is checked on machines without a GPU.
#pragma once
#include <stdint.h>

#ifdef __CUDACC__
#define VM_HD __host__ __device__ __forceinline__
// Big bodies (a field multiplication, a point addition) are called, not inlined, on the
// device: inlining them everywhere multiplies code size and compile time many times over.
#define VM_HD_CALL __host__ __device__ __noinline__
#define VM_UNROLL _Pragma("unroll")
// Constants live in __constant__ memory on the device and in a static array on the host;
// VM_C(name) picks the copy of whichever compilation pass is running (the other pass leaves
// its copy unused, hence maybe_unused: the compiler's warnings reach operators' logs).
#define VM_CONSTS(name, n, ...)                                   \
    __device__ __constant__ uint32_t name##_DEV[n] = {__VA_ARGS__}; \
    [[maybe_unused]] static const uint32_t name##_HOST[n] = {__VA_ARGS__};
#else
#define VM_HD static inline
#define VM_HD_CALL static inline
#define VM_UNROLL
#define VM_CONSTS(name, n, ...) [[maybe_unused]] static const uint32_t name##_HOST[n] = {__VA_ARGS__};
#endif

#ifdef __CUDA_ARCH__
#define VM_C(name) name##_DEV
#else
#define VM_C(name) name##_HOST
#endif

// ---- multi-precision helpers on N little-endian 32-bit limbs ----

template <int N>
VM_HD uint32_t mp_add(uint32_t* r, const uint32_t* a, const uint32_t* b) {
    uint64_t c = 0;
    VM_UNROLL
    for (int i = 0; i < N; i++) {
        c += (uint64_t)a[i] + b[i];
        r[i] = (uint32_t)c;
        c >>= 32;
    }
    return (uint32_t)c;
}

template <int N>
VM_HD uint32_t mp_sub(uint32_t* r, const uint32_t* a, const uint32_t* b) {
    uint64_t borrow = 0;
    VM_UNROLL
    for (int i = 0; i < N; i++) {
        uint64_t t = (uint64_t)a[i] - b[i] - borrow;
        r[i] = (uint32_t)t;
        borrow = t >> 63;
    }
    return (uint32_t)borrow;
}

template <int N>
VM_HD bool mp_geq(const uint32_t* a, const uint32_t* b) {
    VM_UNROLL
    for (int i = N - 1; i >= 0; i--) {
        if (a[i] != b[i]) return a[i] > b[i];
    }
    return true;
}

template <int N>
VM_HD bool mp_is_zero(const uint32_t* a) {
    uint32_t acc = 0;
    VM_UNROLL
    for (int i = 0; i < N; i++) acc |= a[i];
    return acc == 0;
}

template <int N>
VM_HD bool mp_eq(const uint32_t* a, const uint32_t* b) {
    uint32_t acc = 0;
    VM_UNROLL
    for (int i = 0; i < N; i++) acc |= a[i] ^ b[i];
    return acc == 0;
}

// (a + b) mod m, inputs reduced.
template <int N>
VM_HD void mp_add_mod(uint32_t* r, const uint32_t* a, const uint32_t* b, const uint32_t* m) {
    uint32_t carry = mp_add<N>(r, a, b);
    if (carry || mp_geq<N>(r, m)) mp_sub<N>(r, r, m);
}

// (a - b) mod m, inputs reduced.
template <int N>
VM_HD void mp_sub_mod(uint32_t* r, const uint32_t* a, const uint32_t* b, const uint32_t* m) {
    if (mp_sub<N>(r, a, b)) mp_add<N>(r, r, m);
}

// Montgomery product a*b/2^(32N) mod m (CIOS); m < 2^(32N-2), inv = -m^-1 mod 2^32.
template <int N>
VM_HD void mp_mont_mul(uint32_t* r, const uint32_t* a, const uint32_t* b, const uint32_t* m, uint32_t inv) {
    uint32_t t[N + 2];
    VM_UNROLL
    for (int i = 0; i < N + 2; i++) t[i] = 0;
    VM_UNROLL
    for (int i = 0; i < N; i++) {
        uint64_t c = 0;
        VM_UNROLL
        for (int j = 0; j < N; j++) {
            c += (uint64_t)t[j] + (uint64_t)a[j] * b[i];
            t[j] = (uint32_t)c;
            c >>= 32;
        }
        c += t[N];
        t[N] = (uint32_t)c;
        t[N + 1] = (uint32_t)(c >> 32);
        uint32_t q = t[0] * inv;
        c = (uint64_t)t[0] + (uint64_t)q * m[0];
        c >>= 32;
        VM_UNROLL
        for (int j = 1; j < N; j++) {
            c += (uint64_t)t[j] + (uint64_t)q * m[j];
            t[j - 1] = (uint32_t)c;
            c >>= 32;
        }
        c += t[N];
        t[N - 1] = (uint32_t)c;
        t[N] = t[N + 1] + (uint32_t)(c >> 32);
    }
    if (t[N] || mp_geq<N>(t, m)) mp_sub<N>(t, t, m);
    VM_UNROLL
    for (int i = 0; i < N; i++) r[i] = t[i];
}
