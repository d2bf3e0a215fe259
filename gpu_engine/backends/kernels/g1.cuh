// G1 of BLS12-381 (y^2 = x^3 + 4) in XYZZ coordinates: x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2.
// Buckets accumulate affine inputs with the mixed addition, which needs no inversion.
// The affine point (0, 0) is not on the curve and stands for infinity (it is also how
// the CPU library encodes the identity); an XYZZ point is infinity iff ZZ == 0.
// Formulas: madd-2008-s, mdbl-2008-s-1, add-2008-s, dbl-2008-s-1 (a = 0).
#pragma once
#include "fp.cuh"

struct g1_affine {
    fp_t x, y;
};

struct g1_xyzz {
    fp_t x, y, zz, zzz;
};

VM_HD g1_xyzz g1_inf() {
    g1_xyzz r;
    r.x = fp_one();
    r.y = fp_one();
    r.zz = fp_zero();
    r.zzz = fp_zero();
    return r;
}

VM_HD bool g1_is_inf(const g1_xyzz& p) { return fp_is_zero(p.zz); }

VM_HD bool g1_affine_is_inf(const g1_affine& a) { return fp_is_zero(a.x) && fp_is_zero(a.y); }

VM_HD g1_xyzz g1_from_affine(const g1_affine& a) {
    if (g1_affine_is_inf(a)) return g1_inf();
    g1_xyzz r;
    r.x = a.x;
    r.y = a.y;
    r.zz = fp_one();
    r.zzz = fp_one();
    return r;
}

// 2 * (x, y) for an affine point.
VM_HD_CALL g1_xyzz g1_dbl_affine(const g1_affine& a) {
    if (g1_affine_is_inf(a)) return g1_inf();
    fp_t u = fp_add(a.y, a.y);
    fp_t v = fp_sqr(u);
    fp_t w = fp_mul(u, v);
    fp_t s = fp_mul(a.x, v);
    fp_t xx = fp_sqr(a.x);
    fp_t m = fp_add(fp_add(xx, xx), xx);
    g1_xyzz r;
    r.x = fp_sub(fp_sqr(m), fp_add(s, s));
    r.y = fp_sub(fp_mul(m, fp_sub(s, r.x)), fp_mul(w, a.y));
    r.zz = v;
    r.zzz = w;
    return r;
}

VM_HD_CALL g1_xyzz g1_dbl(const g1_xyzz& p) {
    if (g1_is_inf(p)) return p;
    fp_t u = fp_add(p.y, p.y);
    fp_t v = fp_sqr(u);
    fp_t w = fp_mul(u, v);
    fp_t s = fp_mul(p.x, v);
    fp_t xx = fp_sqr(p.x);
    fp_t m = fp_add(fp_add(xx, xx), xx);
    g1_xyzz r;
    r.x = fp_sub(fp_sqr(m), fp_add(s, s));
    r.y = fp_sub(fp_mul(m, fp_sub(s, r.x)), fp_mul(w, p.y));
    r.zz = fp_mul(v, p.zz);
    r.zzz = fp_mul(w, p.zzz);
    return r;
}

// p + a, a affine (mixed addition); handles infinity on either side, p == a and p == -a.
VM_HD_CALL g1_xyzz g1_add_affine(const g1_xyzz& p, const g1_affine& a) {
    if (g1_affine_is_inf(a)) return p;
    if (g1_is_inf(p)) return g1_from_affine(a);
    fp_t u2 = fp_mul(a.x, p.zz);
    fp_t s2 = fp_mul(a.y, p.zzz);
    fp_t pp_ = fp_sub(u2, p.x);
    fp_t r_ = fp_sub(s2, p.y);
    if (fp_is_zero(pp_)) {
        if (fp_is_zero(r_)) return g1_dbl_affine(a);
        return g1_inf();
    }
    fp_t pp = fp_sqr(pp_);
    fp_t ppp = fp_mul(pp_, pp);
    fp_t q = fp_mul(p.x, pp);
    g1_xyzz r;
    r.x = fp_sub(fp_sub(fp_sqr(r_), ppp), fp_add(q, q));
    r.y = fp_sub(fp_mul(r_, fp_sub(q, r.x)), fp_mul(p.y, ppp));
    r.zz = fp_mul(p.zz, pp);
    r.zzz = fp_mul(p.zzz, ppp);
    return r;
}

// p + q, both XYZZ; handles infinity, p == q and p == -q.
VM_HD_CALL g1_xyzz g1_add(const g1_xyzz& p, const g1_xyzz& q) {
    if (g1_is_inf(p)) return q;
    if (g1_is_inf(q)) return p;
    fp_t u1 = fp_mul(p.x, q.zz);
    fp_t u2 = fp_mul(q.x, p.zz);
    fp_t s1 = fp_mul(p.y, q.zzz);
    fp_t s2 = fp_mul(q.y, p.zzz);
    fp_t pp_ = fp_sub(u2, u1);
    fp_t r_ = fp_sub(s2, s1);
    if (fp_is_zero(pp_)) {
        if (fp_is_zero(r_)) return g1_dbl(p);
        return g1_inf();
    }
    fp_t pp = fp_sqr(pp_);
    fp_t ppp = fp_mul(pp_, pp);
    fp_t qq = fp_mul(u1, pp);
    g1_xyzz r;
    r.x = fp_sub(fp_sub(fp_sqr(r_), ppp), fp_add(qq, qq));
    r.y = fp_sub(fp_mul(r_, fp_sub(qq, r.x)), fp_mul(s1, ppp));
    r.zz = fp_mul(fp_mul(p.zz, q.zz), pp);
    r.zzz = fp_mul(fp_mul(p.zzz, q.zzz), ppp);
    return r;
}

// k * p for a small k (a bucket index), by double-and-add from the top bit.
VM_HD_CALL g1_xyzz g1_mul_small(const g1_xyzz& p, uint32_t k) {
    g1_xyzz acc = g1_inf();
    for (int bit = 31; bit >= 0; bit--) {
        acc = g1_dbl(acc);
        if ((k >> bit) & 1u) acc = g1_add(acc, p);
    }
    return acc;
}
