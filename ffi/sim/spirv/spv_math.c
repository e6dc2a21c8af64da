/* SPIR-V interpreter: the value functions behind its instructions: halves,
 * atomics, the OpenCL.std built-ins, float comparisons and classes, and
 * float-to-integer conversion. */
#define _GNU_SOURCE
#include <math.h>

#include "spv_exec.h"

/* ---------------------------------------------------------------- halves */

/* Round to nearest even, as vstore_half does by default and as half
 * arithmetic rounds.  Goes through the value's exact double so that a double
 * operand rounds once.  NaNs stay NaNs (quiet, sign kept), overflow gives
 * infinity, results below 2^-14 are subnormals (units of 2^-24). */
uint16_t spvx_double_to_half(double v)
{
    uint16_t sign = signbit(v) ? 0x8000u : 0;
    double a = fabs(v);
    if (isnan(v))
        return (uint16_t)(sign | 0x7E00u);
    if (a >= 65520.0)
        return (uint16_t)(sign | 0x7C00u);
    if (a < 6.103515625e-05) { /* subnormal: units of 2^-24 */
        double q = nearbyint(a * 16777216.0);
        return (uint16_t)(sign | (uint16_t)q);
    }
    int ex;
    double fr = frexp(a, &ex); /* a = fr * 2^ex, fr in [0.5, 1) */
    double mant = nearbyint(fr * 2048.0); /* 11 significant bits */
    if (mant >= 2048.0) {
        mant /= 2.0;
        ex++;
    }
    return (uint16_t)(sign | (uint16_t)((ex + 14) << 10) | ((uint16_t)mant & 0x3FFu));
}

/* -------------------------------------------------------------- atomics */

static uint64_t combine(uint32_t kind, uint32_t w, uint64_t old, uint64_t v)
{
    switch (kind) {
    case A_INC: return old + 1;
    case A_DEC: return old - 1;
    case A_ADD: return old + v;
    case A_SUB: return old - v;
    case A_SMIN: return sim_sext(old, w) < sim_sext(v, w) ? old : v;
    case A_UMIN: return old < v ? old : v;
    case A_SMAX: return sim_sext(old, w) > sim_sext(v, w) ? old : v;
    case A_UMAX: return old > v ? old : v;
    case A_AND: return old & v;
    case A_OR: return old | v;
    case A_XOR: return old ^ v;
    case A_FADD: return w == 64 ? sim_f64_bits(sim_f64(old) + sim_f64(v)) : sim_f32_bits(sim_f32(old) + sim_f32(v));
    case A_FMIN: return w == 64 ? sim_f64_bits(fmin(sim_f64(old), sim_f64(v))) : sim_f32_bits(fminf(sim_f32(old), sim_f32(v)));
    case A_FMAX: return w == 64 ? sim_f64_bits(fmax(sim_f64(old), sim_f64(v))) : sim_f32_bits(fmaxf(sim_f32(old), sim_f32(v)));
    default: return v; /* exchange */
    }
}

uint64_t spvx_atomic(void *p, uint32_t w, uint32_t kind, uint64_t v, uint64_t cmp)
{
    if (w == 32) {
        uint32_t *q = p;
        switch (kind) {
        case A_LOAD: return __atomic_load_n(q, __ATOMIC_SEQ_CST);
        case A_STORE: __atomic_store_n(q, (uint32_t)v, __ATOMIC_SEQ_CST); return 0;
        case A_XCHG: return __atomic_exchange_n(q, (uint32_t)v, __ATOMIC_SEQ_CST);
        case A_CMPXCHG: {
            uint32_t expected = (uint32_t)cmp;
            __atomic_compare_exchange_n(q, &expected, (uint32_t)v, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST);
            return expected;
        }
        default: {
            uint32_t old = __atomic_load_n(q, __ATOMIC_RELAXED);
            for (;;) {
                uint32_t nv = (uint32_t)combine(kind, 32, old, v & 0xFFFFFFFFu);
                if (__atomic_compare_exchange_n(q, &old, nv, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
                    return old;
            }
        }
        }
    }
    uint64_t *q = p;
    switch (kind) {
    case A_LOAD: return __atomic_load_n(q, __ATOMIC_SEQ_CST);
    case A_STORE: __atomic_store_n(q, v, __ATOMIC_SEQ_CST); return 0;
    case A_XCHG: return __atomic_exchange_n(q, v, __ATOMIC_SEQ_CST);
    case A_CMPXCHG: {
        uint64_t expected = cmp;
        __atomic_compare_exchange_n(q, &expected, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return expected;
    }
    default: {
        uint64_t old = __atomic_load_n(q, __ATOMIC_RELAXED);
        for (;;) {
            uint64_t nv = combine(kind, 64, old, v);
            if (__atomic_compare_exchange_n(q, &old, nv, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
                return old;
        }
    }
    }
}

/* ------------------------------------------------------ OpenCL.std math */

#define PI_D 3.14159265358979323846

static double fsign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0 * x; }

/* Where OpenCL C's powr is NaN (x < 0, 0^0, inf^0, 1^inf, a NaN operand);
 * elsewhere it is pow of |x| (so +0 for either zero). */
static int powr_nan(double x, double y)
{
    return x < 0 || isnan(x) || isnan(y) || (x == 0 && y == 0) || (isinf(x) && y == 0) ||
           (x == 1 && isinf(y));
}

/* sinpi, cospi, tanpi in double: x reduced exactly (fmod by 2, and the
 * reflections 1 - r, 2 - r, 0.5 - r are exact), then sin, cos or tan of pi
 * times a reduced argument in [0, 0.25]; OpenCL C's special values: sinpi(n)
 * is +0 for positive integers n and -0 for negative, cospi(n + 0.5) is +0,
 * tanpi(n) is copysign(0, n) for even n and copysign(0, -n) for odd n,
 * tanpi(n + 0.5) +inf for even n and -inf for odd n; NaN for infinities. */
static double sinpi_d(double x)
{
    if (!isfinite(x))
        return x - x;
    double r = fmod(fabs(x), 2.0), s;
    int neg = r >= 1.0;
    if (neg)
        r -= 1.0;
    if (r > 0.5)
        r = 1.0 - r;
    s = r <= 0.25 ? sin(PI_D * r) : cos(PI_D * (0.5 - r));
    if (s == 0)
        return copysign(0.0, x);
    s = neg ? -s : s;
    return x < 0 ? -s : s;
}

static double cospi_d(double x)
{
    if (!isfinite(x))
        return x - x;
    double r = fmod(fabs(x), 2.0), c;
    if (r > 1.0)
        r = 2.0 - r;
    int neg = r > 0.5;
    if (neg)
        r = 1.0 - r;
    c = r <= 0.25 ? cos(PI_D * r) : sin(PI_D * (0.5 - r));
    return neg ? -c : c;
}

static double tanpi_d(double x)
{
    if (!isfinite(x))
        return x - x;
    double ax = fabs(x), r = fmod(ax, 1.0), t;
    int odd = fmod(ax, 2.0) >= 1.0;
    if (r == 0)
        t = odd ? -0.0 : 0.0;
    else if (r == 0.5)
        t = odd ? -INFINITY : INFINITY;
    else {
        int neg = r > 0.5;
        if (neg)
            r = 1.0 - r;
        t = r <= 0.25 ? tan(PI_D * r) : 1.0 / tan(PI_D * (0.5 - r));
        t = neg ? -t : t;
    }
    return signbit(x) ? -t : t;
}

/* Float instructions of OpenCL.std, computed in the operand's own width so
 * that results match the host library's float functions: one body for both
 * widths, T the type, GET its bits-to-value, S its libm suffix (f or none). */
#define EXT_FLOAT(name, T, GET, S)                                                                 \
    static T name(uint32_t e, uint64_t ua, uint64_t ub, uint64_t uc)                               \
    {                                                                                              \
        T a = GET(ua), b = GET(ub), c = GET(uc);                                                   \
        switch (e) {                                                                               \
        case SPV_CL_acos: return acos##S(a);                                                       \
        case SPV_CL_acosh: return acosh##S(a);                                                     \
        case SPV_CL_asin: return asin##S(a);                                                       \
        case SPV_CL_asinh: return asinh##S(a);                                                     \
        case SPV_CL_atan: return atan##S(a);                                                       \
        case SPV_CL_atan2: return atan2##S(a, b);                                                  \
        case SPV_CL_atanh: return atanh##S(a);                                                     \
        case SPV_CL_cbrt: return cbrt##S(a);                                                       \
        case SPV_CL_ceil: return ceil##S(a);                                                       \
        case SPV_CL_copysign: return copysign##S(a, b);                                            \
        case SPV_CL_cos: case SPV_CL_half_cos: case SPV_CL_native_cos: return cos##S(a);           \
        case SPV_CL_cosh: return cosh##S(a);                                                       \
        case SPV_CL_erfc: return erfc##S(a);                                                       \
        case SPV_CL_erf: return erf##S(a);                                                         \
        case SPV_CL_exp: case SPV_CL_half_exp: case SPV_CL_native_exp: return exp##S(a);           \
        case SPV_CL_exp2: case SPV_CL_half_exp2: case SPV_CL_native_exp2: return exp2##S(a);       \
        case SPV_CL_exp10: case SPV_CL_half_exp10: case SPV_CL_native_exp10: return exp10##S(a);   \
        case SPV_CL_expm1: return expm1##S(a);                                                     \
        case SPV_CL_fabs: return fabs##S(a);                                                       \
        case SPV_CL_fdim: return fdim##S(a, b);                                                    \
        case SPV_CL_floor: return floor##S(a);                                                     \
        case SPV_CL_fma: return fma##S(a, b, c);                                                   \
        case SPV_CL_fmax: case SPV_CL_fmax_common: return fmax##S(a, b);                           \
        case SPV_CL_fmin: case SPV_CL_fmin_common: return fmin##S(a, b);                           \
        case SPV_CL_fmod: return fmod##S(a, b);                                                    \
        case SPV_CL_hypot: return hypot##S(a, b);                                                  \
        case SPV_CL_ldexp: return ldexp##S(a, (int)(int32_t)(uint32_t)ub); /* k: an int */        \
        case SPV_CL_log: case SPV_CL_half_log: case SPV_CL_native_log: return log##S(a);           \
        case SPV_CL_log2: case SPV_CL_half_log2: case SPV_CL_native_log2: return log2##S(a);       \
        case SPV_CL_log10: case SPV_CL_half_log10: case SPV_CL_native_log10: return log10##S(a);   \
        case SPV_CL_log1p: return log1p##S(a);                                                     \
        case SPV_CL_logb: return logb##S(a);                                                       \
        case SPV_CL_mad: return a * b + c; /* mad: two roundings, as the host build */             \
        case SPV_CL_nextafter: return nextafter##S(a, b);                                          \
        case SPV_CL_pow: case SPV_CL_half_powr: case SPV_CL_native_powr: return pow##S(a, b);      \
        case SPV_CL_powr: return powr_nan(a, b) ? (T)NAN : pow##S(fabs##S(a), b);                  \
        case SPV_CL_pown: return pow##S(a, (T)(int32_t)(uint32_t)ub);                              \
        case SPV_CL_remainder: return remainder##S(a, b);                                          \
        case SPV_CL_rint: return rint##S(a);                                                       \
        case SPV_CL_round: return round##S(a);                                                     \
        case SPV_CL_rsqrt: case SPV_CL_half_rsqrt: case SPV_CL_native_rsqrt: return (T)1 / sqrt##S(a); \
        case SPV_CL_sin: case SPV_CL_half_sin: case SPV_CL_native_sin: return sin##S(a);           \
        case SPV_CL_sinh: return sinh##S(a);                                                       \
        case SPV_CL_sqrt: case SPV_CL_half_sqrt: case SPV_CL_native_sqrt: return sqrt##S(a);       \
        case SPV_CL_tan: case SPV_CL_half_tan: case SPV_CL_native_tan: return tan##S(a);           \
        case SPV_CL_tanh: return tanh##S(a);                                                       \
        case SPV_CL_trunc: return trunc##S(a);                                                     \
        case SPV_CL_tgamma: return tgamma##S(a);                                                   \
        case SPV_CL_lgamma: { int sg; return lgamma##S##_r(a, &sg); } /* not signgam: threads */  \
        case SPV_CL_sinpi: return (T)sinpi_d(a); /* the double routine, rounded once */            \
        case SPV_CL_cospi: return (T)cospi_d(a);                                                   \
        case SPV_CL_tanpi: return (T)tanpi_d(a);                                                   \
        case SPV_CL_half_divide: case SPV_CL_native_divide: return a / b;                          \
        case SPV_CL_half_recip: case SPV_CL_native_recip: return (T)1 / a;                         \
        case SPV_CL_fclamp: return fmin##S(fmax##S(a, b), c);                                      \
        case SPV_CL_degrees: return a * (T)(180.0 / PI_D);                                         \
        case SPV_CL_mix: return a + (b - a) * c;                                                   \
        case SPV_CL_radians: return a * (T)(PI_D / 180.0);                                         \
        case SPV_CL_step: return b < a ? (T)0 : (T)1;                                              \
        case SPV_CL_sign: return (T)fsign(a);                                                      \
        default: return NAN;                                                                       \
        }                                                                                          \
    }

EXT_FLOAT(ext_f32, float, sim_f32, f)
EXT_FLOAT(ext_f64, double, sim_f64, )

/* nextafter on halves: a's bits one step toward b (b where they are equal). */
static uint64_t next16(uint16_t a, uint16_t b)
{
    float x = spv_half_value(a), y = spv_half_value(b);
    if (isnan(x) || isnan(y))
        return 0x7E00u;
    if (x == y)
        return b;
    if (!(a & 0x7FFFu)) /* a zero: the smallest subnormal of b's side */
        return (y < 0 ? 0x8000u : 0) | 1u;
    return (x < y) == !(a & 0x8000u) ? a + 1u : a - 1u;
}

/* A half operand's exact double, as bits. */
static uint64_t hd(uint64_t u) { return sim_f64_bits((double)spv_half_value((uint16_t)u)); }

/* Halves: the f64 function of the operands' exact doubles (ldexp's and pown's
 * second operand is an int), rounded once to half, to nearest even.  Within
 * OpenCL's bounds for half, and what numpy's float16 gives from float64;
 * exact wherever the double result is (fma and mad too: a * b is exact in
 * double, and where a * b + c is not, it lies far from any half's tie). */
static uint64_t ext_f16(uint32_t e, uint64_t ua, uint64_t ub, uint64_t uc)
{
    if (e == SPV_CL_nextafter)
        return next16((uint16_t)ua, (uint16_t)ub);
    int int_b = e == SPV_CL_ldexp || e == SPV_CL_pown;
    return spvx_double_to_half(ext_f64(e, hd(ua), int_b ? ub : hd(ub), hd(uc)));
}

uint64_t spvx_ext_float(uint32_t e, uint32_t w, uint64_t ua, uint64_t ub, uint64_t uc)
{
    if (w == 16)
        return ext_f16(e, ua, ub, uc);
    return w == 32 ? sim_f32_bits(ext_f32(e, ua, ub, uc)) : sim_f64_bits(ext_f64(e, ua, ub, uc));
}

/* remquo's quotient bits: the sign of x / y and the low 7 bits of the
 * integral quotient n that remainder rounds to (x - n * y = r), as OpenCL C
 * asks (C's remquo keeps at least 3: glibc's exactly 3).  |x| modulo 128|y|
 * (exact; |x| itself where 128|y| overflows) keeps n's low 7 bits and its
 * parity, so remainder's tie rounds alike; the quotient left is at most 128,
 * found by rounding |x'|/|y| - r/|y| (each division within 2^-45 of exact).
 * 0 where the result is NaN. */
static uint32_t quo7(double x, double y, double r)
{
    if (isnan(r))
        return 0;
    double ax = fabs(x), ay = fabs(y), m = 128.0 * ay;
    if (isfinite(m))
        ax = fmod(ax, m);
    double rr = remainder(ax, ay);
    int32_t n = (int32_t)nearbyint(ax / ay - rr / ay) & 127;
    return (uint32_t)((signbit(x) != signbit(y)) ? -n : n);
}

/* The OpenCL.std functions that also write through a pointer: the result,
 * and in *out what they store (an int for frexp, remquo, lgamma_r; a value
 * of T for modf, fract, sincos).  fract is fmin(x - floor(x), the largest T
 * below 1) with OpenCL C's zeros, infinities and NaN; frexp's exponent is 0
 * for zeros, infinities and NaN. */
#define EXT_OUT(name, T, S, BELOW_ONE)                                                             \
    static T name(uint32_t e, T a, T b, T *of, int32_t *oi)                                       \
    {                                                                                              \
        T r = 0;                                                                                   \
        int i = 0;                                                                                 \
        switch (e) {                                                                               \
        case SPV_CL_frexp:                                                                         \
            r = frexp##S(a, &i);                                                                   \
            *oi = isfinite(a) ? i : 0;                                                             \
            return r;                                                                              \
        case SPV_CL_modf: return modf##S(a, of);                                                   \
        case SPV_CL_fract:                                                                         \
            *of = floor##S(a);                                                                     \
            if (a == 0 || isnan(a))                                                                \
                return a;                                                                          \
            if (isinf(a))                                                                          \
                return copysign##S(0, a);                                                          \
            return fmin##S(a - *of, BELOW_ONE);                                                    \
        case SPV_CL_sincos: *of = cos##S(a); return sin##S(a);                                     \
        case SPV_CL_remquo:                                                                        \
            r = remainder##S(a, b);                                                                \
            *oi = (int32_t)quo7(a, b, r);                                                          \
            return r;                                                                              \
        default: /* lgamma_r */                                                                    \
            r = lgamma##S##_r(a, &i);                                                              \
            *oi = i;                                                                               \
            return r;                                                                              \
        }                                                                                          \
    }

EXT_OUT(out_f32, float, f, 0x1.fffffep-1f)
EXT_OUT(out_f64, double, , 0x1.fffffffffffffp-1)

static int out_is_int(uint32_t e)
{
    return e == SPV_CL_frexp || e == SPV_CL_remquo || e == SPV_CL_lgamma_r;
}

uint64_t spvx_ext_out(uint32_t e, uint32_t w, uint64_t ua, uint64_t ub, uint64_t *out)
{
    int32_t oi = 0;
    if (w == 32) {
        float of = 0, r = out_f32(e, sim_f32(ua), sim_f32(ub), &of, &oi);
        *out = out_is_int(e) ? (uint32_t)oi : sim_f32_bits(of);
        return sim_f32_bits(r);
    }
    double of = 0, r;
    if (w == 64) {
        r = out_f64(e, sim_f64(ua), sim_f64(ub), &of, &oi);
        *out = out_is_int(e) ? (uint32_t)oi : sim_f64_bits(of);
        return sim_f64_bits(r);
    }
    /* Halves: the double function of the exact doubles, rounded once (frexp,
     * modf, remquo exact; fract's x - floor(x) exact in double, its bound
     * applied in half after rounding). */
    r = out_f64(e, sim_f64(hd(ua)), sim_f64(hd(ub)), &of, &oi);
    *out = out_is_int(e) ? (uint32_t)oi : spvx_double_to_half(of);
    uint64_t h = spvx_double_to_half(r);
    return e == SPV_CL_fract && h == 0x3C00u ? 0x3BFFu : h;
}

/* Integer instructions of OpenCL.std at width w. */
uint64_t spvx_ext_int(uint32_t e, uint32_t w, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t m = sim_mask(w);
    int64_t sa = sim_sext(a, w), sb = sim_sext(b, w), sc = sim_sext(c, w);
    int64_t smax = (int64_t)(m >> 1), smin = -smax - 1;
    switch (e) {
    case SPV_CL_s_abs: return (uint64_t)(sa < 0 ? -sa : sa) & m;
    case SPV_CL_s_abs_diff: return (sa > sb ? (uint64_t)sa - (uint64_t)sb : (uint64_t)sb - (uint64_t)sa) & m;
    case SPV_CL_s_add_sat: {
        __int128 r = (__int128)sa + sb;
        return (uint64_t)(r > smax ? smax : r < smin ? smin : (int64_t)r) & m;
    }
    case SPV_CL_u_add_sat: { unsigned __int128 r = (unsigned __int128)a + b; return r > m ? m : (uint64_t)r; }
    case SPV_CL_s_hadd: return (uint64_t)(((__int128)sa + sb) >> 1) & m;
    case SPV_CL_u_hadd: return (uint64_t)(((unsigned __int128)a + b) >> 1) & m;
    case SPV_CL_s_rhadd: return (uint64_t)(((__int128)sa + sb + 1) >> 1) & m;
    case SPV_CL_u_rhadd: return (uint64_t)(((unsigned __int128)a + b + 1) >> 1) & m;
    case SPV_CL_s_clamp: return (uint64_t)(sa < sb ? sb : sa > sc ? sc : sa) & m;
    case SPV_CL_u_clamp: return a < b ? b : a > c ? c : a;
    case SPV_CL_clz: return a ? (uint64_t)(__builtin_clzll(a) - (64 - (int)w)) : w;
    case SPV_CL_ctz: return a ? (uint64_t)__builtin_ctzll(a) : w;
    case SPV_CL_s_mad_hi: return (uint64_t)((((__int128)sa * sb) >> w) + sc) & m;
    case SPV_CL_s_max: return sa > sb ? a : b;
    case SPV_CL_u_max: return a > b ? a : b;
    case SPV_CL_s_min: return sa < sb ? a : b;
    case SPV_CL_u_min: return a < b ? a : b;
    case SPV_CL_s_mul_hi: return (uint64_t)(((__int128)sa * sb) >> w) & m;
    case SPV_CL_rotate: {
        uint32_t s = (uint32_t)(b & (w - 1));
        return s ? ((a << s) | (a >> (w - s))) & m : a;
    }
    case SPV_CL_s_sub_sat: {
        __int128 r = (__int128)sa - sb;
        return (uint64_t)(r > smax ? smax : r < smin ? smin : (int64_t)r) & m;
    }
    case SPV_CL_u_sub_sat: return a > b ? a - b : 0;
    case SPV_CL_popcount: return (uint64_t)__builtin_popcountll(a);
    case SPV_CL_s_mad24: return (uint64_t)(sim_sext(a, 24) * sim_sext(b, 24) + sc) & m;
    case SPV_CL_u_mad24: return ((a & 0xFFFFFF) * (b & 0xFFFFFF) + c) & m;
    case SPV_CL_s_mul24: return (uint64_t)(sim_sext(a, 24) * sim_sext(b, 24)) & m;
    case SPV_CL_u_mul24: return ((a & 0xFFFFFF) * (b & 0xFFFFFF)) & m;
    case SPV_CL_u_abs: return a;
    case SPV_CL_u_abs_diff: return a > b ? a - b : b - a;
    case SPV_CL_u_mul_hi: return (uint64_t)(((unsigned __int128)a * b) >> w) & m;
    case SPV_CL_u_mad_hi: return ((uint64_t)(((unsigned __int128)a * b) >> w) + c) & m;
    case SPV_EXT_BITREVERSE: {
        uint64_t r = 0;
        for (uint32_t i = 0; i < w; i++)
            r |= ((a >> i) & 1u) << (w - 1 - i);
        return r;
    }
    default: return 0;
    }
}

int spvx_fcmp(uint32_t op, double a, double b)
{
    int unord = isnan(a) || isnan(b);
    switch (op) {
    case SPV_OpLessOrGreater: return !unord && a != b;
    case SPV_OpOrdered: return !unord;
    case SPV_OpUnordered: return unord;
    case SPV_OpFOrdEqual: return a == b;
    case SPV_OpFUnordEqual: return unord || a == b;
    case SPV_OpFOrdNotEqual: return !unord && a != b;
    case SPV_OpFUnordNotEqual: return a != b;
    case SPV_OpFOrdLessThan: return a < b;
    case SPV_OpFUnordLessThan: return !(a >= b);
    case SPV_OpFOrdGreaterThan: return a > b;
    case SPV_OpFUnordGreaterThan: return !(a <= b);
    case SPV_OpFOrdLessThanEqual: return a <= b;
    case SPV_OpFUnordLessThanEqual: return !(a > b);
    case SPV_OpFOrdGreaterThanEqual: return a >= b;
    default: return !(a < b);
    }
}

static uint64_t fclass16(uint32_t op, uint16_t h)
{
    uint32_t mag = h & 0x7FFFu, e = mag >> 10;
    switch (op) {
    case SPV_OpIsNan: return mag > 0x7C00u;
    case SPV_OpIsInf: return mag == 0x7C00u;
    case SPV_OpIsFinite: return e != 0x1Fu;
    case SPV_OpIsNormal: return e != 0 && e != 0x1Fu;
    default: return (h & 0x8000u) != 0;
    }
}

uint64_t spvx_fclass(uint32_t op, uint64_t v, uint32_t w)
{
    if (w == 16)
        return fclass16(op, (uint16_t)v);
    if (w == 32) {
        float f = sim_f32(v);
        switch (op) {
        case SPV_OpIsNan: return isnan(f) != 0;
        case SPV_OpIsInf: return isinf(f) != 0;
        case SPV_OpIsFinite: return isfinite(f) != 0;
        case SPV_OpIsNormal: return isnormal(f) != 0;
        default: return signbit(f) != 0;
        }
    }
    double d = sim_f64(v);
    switch (op) {
    case SPV_OpIsNan: return isnan(d) != 0;
    case SPV_OpIsInf: return isinf(d) != 0;
    case SPV_OpIsFinite: return isfinite(d) != 0;
    case SPV_OpIsNormal: return isnormal(d) != 0;
    default: return signbit(d) != 0;
    }
}

/* Float to integer: rounding mode (0 default toward zero, else 1 + the
 * FPRoundingMode decoration), saturating (out-of-range values clamp, NaN
 * gives 0). */
uint64_t spvx_ftoi(double x, uint32_t w, int is_signed, uint32_t mode)
{
    if (isnan(x))
        return 0;
    switch (mode) {
    case 1 + SPV_FPRoundingMode_RTE: x = rint(x); break;
    case 1 + SPV_FPRoundingMode_RTP: x = ceil(x); break;
    case 1 + SPV_FPRoundingMode_RTN: x = floor(x); break;
    default: x = trunc(x); break;
    }
    if (is_signed) {
        double hi = ldexp(1.0, (int)w - 1);
        if (x >= hi) return sim_mask(w) >> 1;
        if (x < -hi) return (uint64_t)(-(int64_t)(sim_mask(w) >> 1) - 1) & sim_mask(w);
        return (uint64_t)(int64_t)x & sim_mask(w);
    }
    if (x <= 0) return 0;
    if (x >= ldexp(1.0, (int)w)) return sim_mask(w);
    return (uint64_t)x;
}

/* ----------------------------------------------------- float rounding */

/* Float bits r of width w one step toward +infinity (up) or -infinity. */
static uint64_t step(uint64_t r, uint32_t w, int up)
{
    uint64_t sign = 1ull << (w - 1);
    if (!(r & ~sign)) /* a zero: the smallest subnormal of the step's sign */
        return up ? 1 : sign | 1;
    return ((r & sign) != 0) == (up != 0) ? r - 1 : r + 1;
}

/* r (width w), the source rounded to nearest even, moved to the neighbour
 * the rounding mode picks; cmp is r's order against the exact source (1
 * above it, -1 below, 0 equal or a NaN). */
static uint64_t directed(uint64_t r, uint32_t w, int cmp, uint32_t mode)
{
    int negative = (r >> (w - 1)) & 1;
    switch (mode) {
    case 1 + SPV_FPRoundingMode_RTZ:
        if (cmp > 0 && !negative)
            return step(r, w, 0);
        return cmp < 0 && negative ? step(r, w, 1) : r;
    case 1 + SPV_FPRoundingMode_RTP: return cmp < 0 ? step(r, w, 1) : r;
    case 1 + SPV_FPRoundingMode_RTN: return cmp > 0 ? step(r, w, 0) : r;
    default: return r;
    }
}

/* To nearest even: an exact double to width w. */
static uint64_t nearest(double x, uint32_t w)
{
    if (w == 16)
        return spvx_double_to_half(x);
    return w == 64 ? sim_f64_bits(x) : sim_f32_bits((float)x);
}

/* The order of an integer-valued (or infinite) double r against integer v,
 * compared exactly. */
static int order_int(double r, uint64_t v, uint32_t c, int is_signed)
{
    if (is_signed) {
        int64_t x = sim_sext(v, c);
        if (r >= 0x1p63 || r < -0x1p63)
            return r > 0 ? 1 : -1;
        int64_t ri = (int64_t)r;
        return (ri > x) - (ri < x);
    }
    if (r >= 0x1p64)
        return 1;
    uint64_t ri = (uint64_t)r;
    return (ri > v) - (ri < v);
}

uint64_t spvx_itof(uint64_t v, uint32_t c, int is_signed, uint32_t w, uint32_t mode)
{
    /* To nearest even in one rounding: a 64-bit integer straight to float or
     * double; to half through double, exact below 2^53 (anything larger is
     * beyond half's range either way).  The result is an integer, or
     * infinite, wherever it is inexact. */
    uint64_t r;
    if (is_signed) {
        int64_t x = sim_sext(v, c);
        r = w == 32 ? sim_f32_bits((float)x) : nearest((double)x, w);
    } else {
        r = w == 32 ? sim_f32_bits((float)v) : nearest((double)v, w);
    }
    if (mode <= 1 + SPV_FPRoundingMode_RTE)
        return r;
    return directed(r, w, order_int(fval(r, w), v, c, is_signed), mode);
}

uint64_t spvx_fconv(uint64_t v, uint32_t c, uint32_t w, uint32_t mode)
{
    if (w == c)
        return v;
    double x = fval(v, c); /* exact */
    uint64_t r = nearest(x, w);
    if (mode <= 1 + SPV_FPRoundingMode_RTE)
        return r;
    double rd = fval(r, w);
    return directed(r, w, (rd > x) - (rd < x), mode);
}
