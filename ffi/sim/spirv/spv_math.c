/* SPIR-V interpreter: the value functions behind its instructions: halves,
 * atomics, the OpenCL.std built-ins, float comparisons and classes, and
 * float-to-integer conversion. */
#define _GNU_SOURCE
#include <math.h>

#include "spv_exec.h"

/* ---------------------------------------------------------------- halves */

float spvx_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F)
        return sim_f32(sign | 0x7F800000u | (m << 13));
    if (e)
        return sim_f32(sign | ((e + 112u) << 23) | (m << 13));
    float mag = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
    return sign ? -mag : mag;
}

/* Round to nearest even, as vstore_half does by default.  Goes through the
 * value's exact double so that a double operand rounds once. */
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

/* Float instructions of OpenCL.std, computed in the operand's own width so
 * that results match the host library's float functions: one body for both
 * widths, T the type, GET its bits-to-value, S its libm suffix (f or none). */
#define EXT_FLOAT(name, T, GET, S)                                                 \
    static T name(uint32_t e, uint64_t ua, uint64_t ub, uint64_t uc)              \
    {                                                                              \
        T a = GET(ua), b = GET(ub), c = GET(uc);                                   \
        switch (e) {                                                               \
        case 0: return acos##S(a);                                                 \
        case 1: return acosh##S(a);                                                \
        case 3: return asin##S(a);                                                 \
        case 4: return asinh##S(a);                                                \
        case 6: return atan##S(a);                                                 \
        case 7: return atan2##S(a, b);                                             \
        case 8: return atanh##S(a);                                                \
        case 11: return cbrt##S(a);                                                \
        case 12: return ceil##S(a);                                                \
        case 13: return copysign##S(a, b);                                         \
        case 14: case 67: case 81: return cos##S(a);                               \
        case 15: return cosh##S(a);                                                \
        case 17: return erfc##S(a);                                                \
        case 18: return erf##S(a);                                                 \
        case 19: case 69: case 83: return exp##S(a);                               \
        case 20: case 70: case 84: return exp2##S(a);                              \
        case 21: case 71: case 85: return exp10##S(a);                             \
        case 22: return expm1##S(a);                                               \
        case 23: return fabs##S(a);                                                \
        case 24: return fdim##S(a, b);                                             \
        case 25: return floor##S(a);                                               \
        case 26: return fma##S(a, b, c);                                           \
        case 27: case 97: return fmax##S(a, b);                                    \
        case 28: case 98: return fmin##S(a, b);                                    \
        case 29: return fmod##S(a, b);                                             \
        case 32: return hypot##S(a, b);                                            \
        case 37: case 72: case 86: return log##S(a);                               \
        case 38: case 73: case 87: return log2##S(a);                              \
        case 39: case 74: case 88: return log10##S(a);                             \
        case 40: return log1p##S(a);                                               \
        case 42: return a * b + c; /* mad: two roundings, as the host build */     \
        case 48: case 50: case 75: case 89: return pow##S(a, b);                   \
        case 49: return pow##S(a, (T)(int32_t)(uint32_t)ub);                       \
        case 51: return remainder##S(a, b);                                        \
        case 53: return rint##S(a);                                                \
        case 55: return round##S(a);                                               \
        case 56: case 77: case 91: return (T)1 / sqrt##S(a);                       \
        case 57: case 78: case 92: return sin##S(a);                               \
        case 59: return sinh##S(a);                                                \
        case 61: case 79: case 93: return sqrt##S(a);                              \
        case 62: case 80: case 94: return tan##S(a);                               \
        case 63: return tanh##S(a);                                                \
        case 66: return trunc##S(a);                                               \
        case 68: case 82: return a / b;                                            \
        case 76: case 90: return (T)1 / a;                                         \
        case 95: return fmin##S(fmax##S(a, b), c);                                 \
        case 96: return a * (T)(180.0 / PI_D);                                     \
        case 99: return a + (b - a) * c;                                           \
        case 100: return a * (T)(PI_D / 180.0);                                    \
        case 101: return b < a ? (T)0 : (T)1;                                      \
        case 103: return (T)fsign(a);                                              \
        default: return NAN;                                                       \
        }                                                                          \
    }

EXT_FLOAT(ext_f32, float, sim_f32, f)
EXT_FLOAT(ext_f64, double, sim_f64, )

uint64_t spvx_ext_float(uint32_t e, uint32_t w, uint64_t ua, uint64_t ub, uint64_t uc)
{
    return w == 32 ? sim_f32_bits(ext_f32(e, ua, ub, uc)) : sim_f64_bits(ext_f64(e, ua, ub, uc));
}

/* Integer instructions of OpenCL.std at width w. */
uint64_t spvx_ext_int(uint32_t e, uint32_t w, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t m = sim_mask(w);
    int64_t sa = sim_sext(a, w), sb = sim_sext(b, w), sc = sim_sext(c, w);
    int64_t smax = (int64_t)(m >> 1), smin = -smax - 1;
    switch (e) {
    case 141: return (uint64_t)(sa < 0 ? -sa : sa) & m;
    case 142: return (sa > sb ? (uint64_t)sa - (uint64_t)sb : (uint64_t)sb - (uint64_t)sa) & m;
    case 143: {
        __int128 r = (__int128)sa + sb;
        return (uint64_t)(r > smax ? smax : r < smin ? smin : (int64_t)r) & m;
    }
    case 144: { unsigned __int128 r = (unsigned __int128)a + b; return r > m ? m : (uint64_t)r; }
    case 145: return (uint64_t)(((__int128)sa + sb) >> 1) & m;
    case 146: return (uint64_t)(((unsigned __int128)a + b) >> 1) & m;
    case 147: return (uint64_t)(((__int128)sa + sb + 1) >> 1) & m;
    case 148: return (uint64_t)(((unsigned __int128)a + b + 1) >> 1) & m;
    case 149: return (uint64_t)(sa < sb ? sb : sa > sc ? sc : sa) & m;
    case 150: return a < b ? b : a > c ? c : a;
    case 151: return a ? (uint64_t)(__builtin_clzll(a) - (64 - (int)w)) : w;
    case 152: return a ? (uint64_t)__builtin_ctzll(a) : w;
    case 153: return (uint64_t)((((__int128)sa * sb) >> w) + sc) & m;
    case 156: return sa > sb ? a : b;
    case 157: return a > b ? a : b;
    case 158: return sa < sb ? a : b;
    case 159: return a < b ? a : b;
    case 160: return (uint64_t)(((__int128)sa * sb) >> w) & m;
    case 161: {
        uint32_t s = (uint32_t)(b & (w - 1));
        return s ? ((a << s) | (a >> (w - s))) & m : a;
    }
    case 162: {
        __int128 r = (__int128)sa - sb;
        return (uint64_t)(r > smax ? smax : r < smin ? smin : (int64_t)r) & m;
    }
    case 163: return a > b ? a - b : 0;
    case 166: return (uint64_t)__builtin_popcountll(a);
    case 167: return (uint64_t)(sim_sext(a, 24) * sim_sext(b, 24) + sc) & m;
    case 168: return ((a & 0xFFFFFF) * (b & 0xFFFFFF) + c) & m;
    case 169: return (uint64_t)(sim_sext(a, 24) * sim_sext(b, 24)) & m;
    case 170: return ((a & 0xFFFFFF) * (b & 0xFFFFFF)) & m;
    case 201: return a;
    case 202: return a > b ? a - b : b - a;
    case 203: return (uint64_t)(((unsigned __int128)a * b) >> w) & m;
    case 204: return ((uint64_t)(((unsigned __int128)a * b) >> w) + c) & m;
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
    case 161: return !unord && a != b;
    case 162: return !unord;
    case 163: return unord;
    case 180: return a == b;
    case 181: return unord || a == b;
    case 182: return !unord && a != b;
    case 183: return a != b;
    case 184: return a < b;
    case 185: return !(a >= b);
    case 186: return a > b;
    case 187: return !(a <= b);
    case 188: return a <= b;
    case 189: return !(a > b);
    case 190: return a >= b;
    default: return !(a < b);
    }
}

uint64_t spvx_fclass(uint32_t op, uint64_t v, uint32_t w)
{
    if (w == 32) {
        float f = sim_f32(v);
        switch (op) {
        case 156: return isnan(f) != 0;
        case 157: return isinf(f) != 0;
        case 158: return isfinite(f) != 0;
        case 159: return isnormal(f) != 0;
        default: return signbit(f) != 0;
        }
    }
    double d = sim_f64(v);
    switch (op) {
    case 156: return isnan(d) != 0;
    case 157: return isinf(d) != 0;
    case 158: return isfinite(d) != 0;
    case 159: return isnormal(d) != 0;
    default: return signbit(d) != 0;
    }
}

/* Float to integer: rounding mode (0 default toward zero, 1 rte, 2 rtz, 3
 * rtp, 4 rtn), saturating (out-of-range values clamp, NaN gives 0). */
uint64_t spvx_ftoi(double x, uint32_t w, int is_signed, uint32_t mode)
{
    if (isnan(x))
        return 0;
    switch (mode) {
    case 1: x = rint(x); break;
    case 3: x = ceil(x); break;
    case 4: x = floor(x); break;
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
