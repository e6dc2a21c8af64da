/* PTX rounding modes and conversions (cvt), for the interpreter.
 *
 * The directed modes switch the host's rounding mode around one operation;
 * the attribute on those functions keeps the compiler from folding or
 * moving the arithmetic across the switch.
 */
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_exec.h"

/* double -> bf16: first to float rounding to odd (toward zero, then the
 * last bit set if inexact), which keeps enough bits for the final rounding
 * to be the one a direct conversion would make. */
__attribute__((optimize("rounding-math"), noinline)) uint16_t ptx_d2bf(double d, int mode)
{
    if (isnan(d))
        return 0x7fff;
    int old = fegetround();
    fesetround(FE_TOWARDZERO);
    volatile float f = (float)d;
    fesetround(old);
    uint32_t u = (uint32_t)sim_f32_bits(f);
    if ((double)f != d && !isinf(d))
        u |= 1;
    uint32_t hi = u >> 16, lower = u & 0xffff, sign = u >> 31;
    switch (mode) {
    case RND_RZ: break;
    case RND_RP: hi += lower && !sign; break;
    case RND_RM: hi += lower && sign; break;
    default: hi += lower > 0x8000 || (lower == 0x8000 && (hi & 1)); break;
    }
    return (uint16_t)hi;
}

/* ------------------------------------------------------------- rounding */

static int fe_mode(int mode)
{
    switch (mode) {
    case RND_RZ: case RND_RZI: return FE_TOWARDZERO;
    case RND_RM: case RND_RMI: return FE_DOWNWARD;
    case RND_RP: case RND_RPI: return FE_UPWARD;
    default: return FE_TONEAREST;
    }
}

/* Arithmetic in a directed rounding mode; the attribute keeps the compiler
 * from folding or moving the operations across the mode switch. */
__attribute__((optimize("rounding-math"), noinline)) uint64_t
ptx_directed(int op, int type, int mode, uint64_t a, uint64_t b, uint64_t c)
{
    int old = fegetround();
    fesetround(fe_mode(mode));
    uint64_t r = 0;
    if (type == T_F32) {
        volatile float x = sim_f32(a), y = sim_f32(b), z = sim_f32(c), v = 0;
        switch (op) {
        case OP_ADD: v = x + y; break;
        case OP_SUB: v = x - y; break;
        case OP_MUL: v = x * y; break;
        case OP_DIV: v = x / y; break;
        case OP_FMA: v = fmaf(x, y, z); break;
        case OP_RCP: v = 1.0f / x; break;
        case OP_SQRT: v = sqrtf(x); break;
        default: break;
        }
        r = sim_f32_bits(v);
    } else {
        volatile double x = sim_f64(a), y = sim_f64(b), z = sim_f64(c), v = 0;
        switch (op) {
        case OP_ADD: v = x + y; break;
        case OP_SUB: v = x - y; break;
        case OP_MUL: v = x * y; break;
        case OP_DIV: v = x / y; break;
        case OP_FMA: v = fma(x, y, z); break;
        case OP_RCP: v = 1.0 / x; break;
        case OP_SQRT: v = sqrt(x); break;
        default: break;
        }
        r = sim_f64_bits(v);
    }
    fesetround(old);
    return r;
}

/* int64/uint64 -> float/double/half in a rounding mode. */
__attribute__((optimize("rounding-math"), noinline)) static uint64_t
int_to_float(uint64_t v, int is_signed_src, int dtype, int mode)
{
    int old = fegetround();
    fesetround(fe_mode(mode));
    uint64_t r;
    if (dtype == T_F32) {
        volatile float f = is_signed_src ? (float)(int64_t)v : (float)v;
        r = sim_f32_bits(f);
    } else if (dtype == T_F64) {
        volatile double d = is_signed_src ? (double)(int64_t)v : (double)v;
        r = sim_f64_bits(d);
    } else if (dtype == T_F16) {
        /* |v| < 2^64: through double is one rounding except for huge values,
         * which overflow half anyway. */
        volatile double d = is_signed_src ? (double)(int64_t)v : (double)v;
        r = d2h(d);
    } else {
        volatile double d = is_signed_src ? (double)(int64_t)v : (double)v;
        r = ptx_d2bf(d, mode);
    }
    fesetround(old);
    return r;
}

__attribute__((optimize("rounding-math"), noinline)) static uint64_t
narrow_float(double d, int dtype, int mode)
{
    int old = fegetround();
    fesetround(fe_mode(mode));
    uint64_t r;
    if (dtype == T_F32) {
        volatile float f = (float)d;
        r = sim_f32_bits(f);
    } else if (dtype == T_F16) {
        volatile double x = d;
        r = d2h(x);
    } else {
        r = ptx_d2bf(d, mode);
    }
    fesetround(old);
    return r;
}

double ptx_to_double(uint64_t v, int t)
{
    switch (t) {
    case T_F32: return sim_f32(v);
    case T_F64: return sim_f64(v);
    case T_F16: return h2d((uint16_t)v);
    case T_BF16: return bf2d((uint16_t)v);
    default: return 0;
    }
}

static int is_ftype(int t) { return t == T_F16 || t == T_BF16 || t == T_F32 || t == T_F64; }

/* One cvt.  Float-to-int saturates (NaN gives 0), as PTX defines. */
uint64_t ptx_cvt_one(uint64_t x, int dt, int st, int mode, unsigned flags)
{
    int db = ibits(dt), sb = ibits(st);
    if (!is_ftype(dt) && !is_ftype(st)) {
        int64_t sv = is_signed(st) ? sim_sext(x, sb) : (int64_t)(x & sim_mask(sb));
        if (flags & FL_SAT) {
            if (is_signed(dt)) {
                int64_t lo = -(int64_t)(1ull << (db - 1)) , hi = (int64_t)((1ull << (db - 1)) - 1);
                if (db == 64) { lo = INT64_MIN; hi = INT64_MAX; }
                if (!is_signed(st) && (x & sim_mask(sb)) > (uint64_t)hi)
                    sv = hi;
                else if (sv < lo)
                    sv = lo;
                else if (sv > hi)
                    sv = hi;
            } else {
                uint64_t hi = sim_mask(db);
                if (is_signed(st) && sv < 0)
                    sv = 0;
                else if ((uint64_t)sv > hi && !(is_signed(st) && sv < 0))
                    sv = (int64_t)hi;
            }
        }
        return is_signed(dt) ? (uint64_t)sim_sext((uint64_t)sv, db) : (uint64_t)sv & sim_mask(db);
    }
    if (!is_ftype(st)) { /* int -> float */
        uint64_t v = is_signed(st) ? (uint64_t)sim_sext(x, sb) : x & sim_mask(sb);
        int m = mode == RND_NONE ? RND_RN : mode;
        if (m == RND_RN && dt == T_F32)
            return sim_f32_bits(is_signed(st) ? (float)(int64_t)v : (float)v);
        if (m == RND_RN && dt == T_F64)
            return sim_f64_bits(is_signed(st) ? (double)(int64_t)v : (double)v);
        return int_to_float(v, is_signed(st), dt, m);
    }
    double d = ptx_to_double(x, st);
    if ((flags & FL_FTZ) && st == T_F32)
        d = ftz32((float)d);
    if (!is_ftype(dt)) { /* float -> int */
        if (isnan(d))
            return 0;
        switch (mode) {
        case RND_RZI: d = trunc(d); break;
        case RND_RMI: d = floor(d); break;
        case RND_RPI: d = ceil(d); break;
        default: d = nearbyint(d); break;
        }
        if (is_signed(dt)) {
            double lo = -ldexp(1.0, db - 1), hi = ldexp(1.0, db - 1);
            int64_t v = d <= lo ? (db == 64 ? INT64_MIN : (int64_t)lo) : d >= hi ? (db == 64 ? INT64_MAX : (int64_t)hi - 1) : (int64_t)d;
            return (uint64_t)sim_sext((uint64_t)v, db);
        }
        double hi = ldexp(1.0, db);
        uint64_t v = d <= 0 ? 0 : d >= hi ? sim_mask(db) : (uint64_t)d;
        return v;
    }
    /* float -> float */
    if (mode == RND_RNI || mode == RND_RZI || mode == RND_RMI || mode == RND_RPI) {
        switch (mode) {
        case RND_RZI: d = trunc(d); break;
        case RND_RMI: d = floor(d); break;
        case RND_RPI: d = ceil(d); break;
        default: d = nearbyint(d); break;
        }
    }
    if (flags & FL_SAT)
        d = isnan(d) ? 0.0 : d < 0 ? 0.0 : d > 1 ? 1.0 : d;
    uint64_t r;
    if (dt == T_F64) {
        r = sim_f64_bits(d);
    } else if (dt == T_F32 && (st != T_F64 || mode == RND_NONE || mode == RND_RN || mode >= RND_RNI)) {
        float f = (float)d;
        if (flags & FL_FTZ)
            f = ftz32(f);
        r = sim_f32_bits(f);
    } else if (dt == T_F16 && (mode == RND_NONE || mode == RND_RN || mode >= RND_RNI)) {
        r = d2h(d);
    } else if (dt == T_BF16 && (mode == RND_NONE || mode == RND_RN || mode >= RND_RNI)) {
        r = ptx_d2bf(d, RND_RN);
    } else {
        r = narrow_float(d, dt, mode);
        if (dt == T_F32 && (flags & FL_FTZ))
            r = sim_f32_bits(ftz32(sim_f32(r)));
    }
    return r;
}


/* ------------------------------------------------------------- fp8 */

/* A double to fp8 `kind`, rounded to nearest even and saturated to the
 * largest finite value (.satfinite: infinities too); NaN is 0x7f. */
static uint8_t fp8_of(double d, int kind)
{
    int e5 = kind == FP8_E5M2, mb = e5 ? 2 : 3, bias = e5 ? 15 : 7, emin = 1 - bias;
    uint8_t sign = signbit(d) ? 0x80 : 0, max = e5 ? 0x7b : 0x7e; /* 57344, 448 */
    double a = fabs(d);
    if (isnan(d))
        return 0x7f;
    if (isinf(a))
        return sign | max;
    int e;
    (void)frexp(a, &e);
    e = e - 1 < emin ? emin : e - 1; /* the exponent of a's binade, or the subnormals' */
    double q = ldexp(1.0, e - mb), n = a / q, f = floor(n), r = n - f;
    if (r > 0.5 || (r == 0.5 && fmod(f, 2.0) != 0))
        f += 1;
    double v = f * q; /* on the fp8 grid, unbounded above */
    if (v >= fp8_to_double(max, kind))
        return sign | max;
    if (v < ldexp(1.0, emin)) /* subnormal (or zero) */
        return sign | (uint8_t)(v / ldexp(1.0, emin - mb));
    (void)frexp(v, &e);
    double frac = v / ldexp(1.0, e - 1) - 1; /* in [0, 1) */
    return sign | (uint8_t)((e - 1 + bias) << mb) | (uint8_t)(frac * (1 << mb));
}

uint64_t ptx_cvt_fp8(const pinsn *in, uint64_t a, uint64_t b)
{
    int kind = (int)(in->imm & 3);
    if (!(in->imm & FP8_TO)) { /* .f16x2 from .e4m3x2/.e5m2x2: byte i to half i */
        uint64_t lo = d2h(fp8_to_double((uint8_t)a, kind));
        return d2h(fp8_to_double((uint8_t)(a >> 8), kind)) << 16 | lo;
    }
    double hi, lo; /* from .f32 a, b (a to the upper byte) or from .f16x2 a */
    if (in->type2 == T_F32) {
        hi = sim_f32(a);
        lo = sim_f32(b);
    } else {
        hi = h2d((uint16_t)(a >> 16));
        lo = h2d((uint16_t)a);
    }
    return (uint64_t)fp8_of(hi, kind) << 8 | fp8_of(lo, kind);
}
