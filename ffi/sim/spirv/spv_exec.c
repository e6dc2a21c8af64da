/* SPIR-V interpreter: runs the compiled form of spv_internal.h.
 *
 * A work-group's work-items run one at a time on one thread, each until it
 * finishes or reaches a barrier or a collective (sub-group or work-group
 * operation); its state (pc, frames) is explicit, so it resumes where it
 * stopped.  When every work-item of a group waits at the barrier, they all
 * go on; when a sub-group's work-items wait at the same collective, it is
 * computed from their values and they go on.  Anything else (some finished,
 * others wait; different barriers) is a divergent barrier: the launch fails.
 *
 * Work-groups are independent: a launch over the whole grid is split over
 * the machine's cores.  Every load, store and atomic is checked against the
 * work-item's private memory, the group's local memory, the program's
 * variables and the device's allocations: anything else is an illegal
 * address, which poisons the device as on hardware. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../engine.h"
#include "spv_internal.h"

#define MAX_THREADS 16
#define CACHE_RANGES 8
#define LZ_VALS_MAX SPV_SUBGROUP_SIZE

enum { S_RUN, S_BARRIER, S_COLL, S_DONE };
enum { R_DONE = 1, R_BARRIER = 2, R_COLL = 3 };

typedef struct frame {
    uint32_t ret_pc, func;
    uint64_t *regs;
    uint8_t *priv;
} frame;

typedef struct item {
    uint32_t pc, func, depth;
    uint8_t state;
    uint64_t *regs;
    uint8_t *priv;
    frame *stack;
    uint32_t lid[3];
    uint32_t linear;
} item;

typedef struct range {
    uintptr_t lo, hi;
} range;

typedef struct group {
    const spv_program *p;
    const spv_kernel *k;
    const ar_launch *l;
    void **params;
    uint32_t gid[3];
    uint32_t size[3];
    uint32_t nitems;
    item *items;
    uint64_t *regs;
    uint8_t *priv;
    size_t priv_total;
    frame *frames;
    uint8_t *local;
    size_t local_len;
    range cache[CACHE_RANGES];
    unsigned ncache, next_cache;
} group;

/* ---------------------------------------------------------------- values */

static inline uint64_t mask(uint32_t w) { return w >= 64 ? ~0ull : (1ull << w) - 1; }
static inline int64_t sext(uint64_t v, uint32_t w)
{
    return w >= 64 ? (int64_t)v : (int64_t)(v << (64 - w)) >> (64 - w);
}
static inline float f32(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint64_t uf32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline double f64(uint64_t v)
{
    double d;
    memcpy(&d, &v, 8);
    return d;
}
static inline uint64_t uf64(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}
/* A float operand of width w as double (exact for f32). */
static inline double fval(uint64_t v, uint32_t w) { return w == 64 ? f64(v) : (double)f32(v); }

/* --------------------------------------------------------------- memory */

static int addr_slow(group *g, uintptr_t a, uint64_t n)
{
    arsim_alloc al;
    if (arsim_mem_lookup((const void *)a, &al) != ARSIM_OK ||
        n > (uintptr_t)al.base + al.size - a) {
        (void)arsim_check_access((const void *)a, n, -1); /* records the fault report */
        return 0;
    }
    uintptr_t lo = (uintptr_t)al.base, hi = lo + al.size;
    g->cache[g->next_cache] = (range){lo, hi};
    g->next_cache = (g->next_cache + 1) % CACHE_RANGES;
    if (g->ncache < CACHE_RANGES)
        g->ncache++;
    return 1;
}

/* 1 if [a, a+n) is memory a kernel may touch. */
static inline int addr_ok(group *g, uintptr_t a, uint64_t n)
{
    uintptr_t pv = (uintptr_t)g->priv;
    if (a >= pv && a - pv <= g->priv_total && n <= g->priv_total - (a - pv))
        return 1;
    uintptr_t lc = (uintptr_t)g->local;
    if (a >= lc && a - lc <= g->local_len && n <= g->local_len - (a - lc))
        return 1;
    for (unsigned i = 0; i < g->ncache; i++)
        if (a >= g->cache[i].lo && a < g->cache[i].hi && n <= g->cache[i].hi - a)
            return 1;
    uintptr_t gl = (uintptr_t)g->p->globals;
    if (a >= gl && a - gl <= g->p->globals_size && n <= g->p->globals_size - (a - gl))
        return 1;
    return a != 0 && addr_slow(g, a, n);
}

static inline uint64_t load_n(const void *p, uint32_t bytes)
{
    switch (bytes) {
    case 1: return *(const uint8_t *)p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static inline void store_n(void *p, uint32_t bytes, uint64_t v)
{
    switch (bytes) {
    case 1: *(uint8_t *)p = (uint8_t)v; break;
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

/* ---------------------------------------------------------------- halves */

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F)
        return f32(sign | 0x7F800000u | (m << 13));
    if (e)
        return f32(sign | ((e + 112u) << 23) | (m << 13));
    float mag = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
    return sign ? -mag : mag;
}

/* Round to nearest even, as vstore_half does by default.  Goes through the
 * value's exact double so that a double operand rounds once. */
static uint16_t double_to_half(double v)
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
    case A_SMIN: return sext(old, w) < sext(v, w) ? old : v;
    case A_UMIN: return old < v ? old : v;
    case A_SMAX: return sext(old, w) > sext(v, w) ? old : v;
    case A_UMAX: return old > v ? old : v;
    case A_AND: return old & v;
    case A_OR: return old | v;
    case A_XOR: return old ^ v;
    case A_FADD: return w == 64 ? uf64(f64(old) + f64(v)) : uf32(f32(old) + f32(v));
    case A_FMIN: return w == 64 ? uf64(fmin(f64(old), f64(v))) : uf32(fminf(f32(old), f32(v)));
    case A_FMAX: return w == 64 ? uf64(fmax(f64(old), f64(v))) : uf32(fmaxf(f32(old), f32(v)));
    default: return v; /* exchange */
    }
}

static uint64_t atomic_op(void *p, uint32_t w, uint32_t kind, uint64_t v, uint64_t cmp)
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
 * that results match the host library's float functions. */
static uint64_t ext_float(uint32_t e, uint32_t w, uint64_t ua, uint64_t ub, uint64_t uc)
{
    if (w == 32) {
        float a = f32(ua), b = f32(ub), c = f32(uc), r;
        switch (e) {
        case 0: r = acosf(a); break;
        case 1: r = acoshf(a); break;
        case 3: r = asinf(a); break;
        case 4: r = asinhf(a); break;
        case 6: r = atanf(a); break;
        case 7: r = atan2f(a, b); break;
        case 8: r = atanhf(a); break;
        case 11: r = cbrtf(a); break;
        case 12: r = ceilf(a); break;
        case 13: r = copysignf(a, b); break;
        case 14: case 67: case 81: r = cosf(a); break;
        case 15: r = coshf(a); break;
        case 17: r = erfcf(a); break;
        case 18: r = erff(a); break;
        case 19: case 69: case 83: r = expf(a); break;
        case 20: case 70: case 84: r = exp2f(a); break;
        case 21: case 71: case 85: r = exp10f(a); break;
        case 22: r = expm1f(a); break;
        case 23: r = fabsf(a); break;
        case 24: r = fdimf(a, b); break;
        case 25: r = floorf(a); break;
        case 26: r = fmaf(a, b, c); break;
        case 27: case 97: r = fmaxf(a, b); break;
        case 28: case 98: r = fminf(a, b); break;
        case 29: r = fmodf(a, b); break;
        case 32: r = hypotf(a, b); break;
        case 37: case 72: case 86: r = logf(a); break;
        case 38: case 73: case 87: r = log2f(a); break;
        case 39: case 74: case 88: r = log10f(a); break;
        case 40: r = log1pf(a); break;
        case 42: r = a * b + c; break; /* mad: two roundings, as the host build */
        case 48: case 50: case 75: case 89: r = powf(a, b); break;
        case 49: r = powf(a, (float)(int32_t)(uint32_t)ub); break;
        case 51: r = remainderf(a, b); break;
        case 53: r = rintf(a); break;
        case 55: r = roundf(a); break;
        case 56: case 77: case 91: r = 1.0f / sqrtf(a); break;
        case 57: case 78: case 92: r = sinf(a); break;
        case 59: r = sinhf(a); break;
        case 61: case 79: case 93: r = sqrtf(a); break;
        case 62: case 80: case 94: r = tanf(a); break;
        case 63: r = tanhf(a); break;
        case 66: r = truncf(a); break;
        case 68: case 82: r = a / b; break;
        case 76: case 90: r = 1.0f / a; break;
        case 95: r = fminf(fmaxf(a, b), c); break;
        case 96: r = a * (float)(180.0 / PI_D); break;
        case 99: r = a + (b - a) * c; break;
        case 100: r = a * (float)(PI_D / 180.0); break;
        case 101: r = b < a ? 0.0f : 1.0f; break;
        case 103: r = (float)fsign(a); break;
        default: r = NAN; break;
        }
        return uf32(r);
    }
    double a = f64(ua), b = f64(ub), c = f64(uc), r;
    switch (e) {
    case 0: r = acos(a); break;
    case 1: r = acosh(a); break;
    case 3: r = asin(a); break;
    case 4: r = asinh(a); break;
    case 6: r = atan(a); break;
    case 7: r = atan2(a, b); break;
    case 8: r = atanh(a); break;
    case 11: r = cbrt(a); break;
    case 12: r = ceil(a); break;
    case 13: r = copysign(a, b); break;
    case 14: case 67: case 81: r = cos(a); break;
    case 15: r = cosh(a); break;
    case 17: r = erfc(a); break;
    case 18: r = erf(a); break;
    case 19: case 69: case 83: r = exp(a); break;
    case 20: case 70: case 84: r = exp2(a); break;
    case 21: case 71: case 85: r = exp10(a); break;
    case 22: r = expm1(a); break;
    case 23: r = fabs(a); break;
    case 24: r = fdim(a, b); break;
    case 25: r = floor(a); break;
    case 26: r = fma(a, b, c); break;
    case 27: case 97: r = fmax(a, b); break;
    case 28: case 98: r = fmin(a, b); break;
    case 29: r = fmod(a, b); break;
    case 32: r = hypot(a, b); break;
    case 37: case 72: case 86: r = log(a); break;
    case 38: case 73: case 87: r = log2(a); break;
    case 39: case 74: case 88: r = log10(a); break;
    case 40: r = log1p(a); break;
    case 42: r = a * b + c; break;
    case 48: case 50: case 75: case 89: r = pow(a, b); break;
    case 49: r = pow(a, (double)(int32_t)(uint32_t)ub); break;
    case 51: r = remainder(a, b); break;
    case 53: r = rint(a); break;
    case 55: r = round(a); break;
    case 56: case 77: case 91: r = 1.0 / sqrt(a); break;
    case 57: case 78: case 92: r = sin(a); break;
    case 59: r = sinh(a); break;
    case 61: case 79: case 93: r = sqrt(a); break;
    case 62: case 80: case 94: r = tan(a); break;
    case 63: r = tanh(a); break;
    case 66: r = trunc(a); break;
    case 68: case 82: r = a / b; break;
    case 76: case 90: r = 1.0 / a; break;
    case 95: r = fmin(fmax(a, b), c); break;
    case 96: r = a * (180.0 / PI_D); break;
    case 99: r = a + (b - a) * c; break;
    case 100: r = a * (PI_D / 180.0); break;
    case 101: r = b < a ? 0.0 : 1.0; break;
    case 103: r = fsign(a); break;
    default: r = NAN; break;
    }
    return uf64(r);
}

/* Integer instructions of OpenCL.std at width w. */
static uint64_t ext_int(uint32_t e, uint32_t w, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t m = mask(w);
    int64_t sa = sext(a, w), sb = sext(b, w), sc = sext(c, w);
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
    case 167: return (uint64_t)(sext(a, 24) * sext(b, 24) + sc) & m;
    case 168: return ((a & 0xFFFFFF) * (b & 0xFFFFFF) + c) & m;
    case 169: return (uint64_t)(sext(a, 24) * sext(b, 24)) & m;
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

static int fcmp(uint32_t op, double a, double b)
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

static uint64_t fclass(uint32_t op, uint64_t v, uint32_t w)
{
    if (w == 32) {
        float f = f32(v);
        switch (op) {
        case 156: return isnan(f) != 0;
        case 157: return isinf(f) != 0;
        case 158: return isfinite(f) != 0;
        case 159: return isnormal(f) != 0;
        default: return signbit(f) != 0;
        }
    }
    double d = f64(v);
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
static uint64_t ftoi(double x, uint32_t w, int is_signed, uint32_t mode)
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
        if (x >= hi) return mask(w) >> 1;
        if (x < -hi) return (uint64_t)(-(int64_t)(mask(w) >> 1) - 1) & mask(w);
        return (uint64_t)(int64_t)x & mask(w);
    }
    if (x <= 0) return 0;
    if (x >= ldexp(1.0, (int)w)) return mask(w);
    return (uint64_t)x;
}

/* --------------------------------------------------------------- builtins */

static uint32_t subgroup_count(const group *g) { return (g->nitems + SPV_SUBGROUP_SIZE - 1) / SPV_SUBGROUP_SIZE; }

static void builtin(const group *g, const item *it, uint32_t which, uint64_t *out, uint32_t n)
{
    const ar_launch *l = g->l;
    uint64_t v[3] = {0, 0, 0};
    uint32_t sg = it->linear / SPV_SUBGROUP_SIZE;
    switch (which) {
    case B_GLOBAL_ID:
        for (int i = 0; i < 3; i++) v[i] = (uint64_t)g->gid[i] * g->size[i] + it->lid[i];
        break;
    case B_LOCAL_ID: for (int i = 0; i < 3; i++) v[i] = it->lid[i]; break;
    case B_GROUP_ID: for (int i = 0; i < 3; i++) v[i] = g->gid[i]; break;
    case B_GROUP_SIZE: case B_ENQUEUED_GROUP_SIZE:
        for (int i = 0; i < 3; i++) v[i] = g->size[i];
        break;
    case B_NUM_GROUPS: v[0] = l->grid.x; v[1] = l->grid.y; v[2] = l->grid.z; break;
    case B_GLOBAL_SIZE:
        v[0] = (uint64_t)l->grid.x * l->block.x;
        v[1] = (uint64_t)l->grid.y * l->block.y;
        v[2] = (uint64_t)l->grid.z * l->block.z;
        break;
    case B_GLOBAL_OFFSET: break;
    case B_GLOBAL_LINEAR_ID: {
        uint64_t gx = (uint64_t)l->grid.x * l->block.x, gy = (uint64_t)l->grid.y * l->block.y;
        uint64_t x = (uint64_t)g->gid[0] * g->size[0] + it->lid[0];
        uint64_t y = (uint64_t)g->gid[1] * g->size[1] + it->lid[1];
        uint64_t z = (uint64_t)g->gid[2] * g->size[2] + it->lid[2];
        v[0] = x + gx * (y + gy * z);
        break;
    }
    case B_LOCAL_INDEX: v[0] = it->linear; break;
    case B_WORK_DIM:
        v[0] = (uint64_t)l->grid.z * l->block.z > 1 ? 3 : (uint64_t)l->grid.y * l->block.y > 1 ? 2 : 1;
        break;
    case B_SUBGROUP_SIZE: {
        uint32_t left = g->nitems - sg * SPV_SUBGROUP_SIZE;
        v[0] = left < SPV_SUBGROUP_SIZE ? left : SPV_SUBGROUP_SIZE;
        break;
    }
    case B_SUBGROUP_MAX_SIZE: v[0] = SPV_SUBGROUP_SIZE; break;
    case B_NUM_SUBGROUPS: v[0] = subgroup_count(g); break;
    case B_SUBGROUP_ID: v[0] = sg; break;
    case B_SUBGROUP_LOCAL_ID: v[0] = it->linear % SPV_SUBGROUP_SIZE; break;
    default: break;
    }
    for (uint32_t i = 0; i < n && i < 3; i++)
        out[i] = v[i];
}

/* ------------------------------------------------------------ interpreter */

/* Makes a frame for function f at regs/priv (arguments already in place). */
static void enter(const group *g, const spv_func *f, uint64_t *regs, uint8_t *priv)
{
    const spv_program *p = g->p;
    if (f->nconst)
        memcpy(regs + f->const_base, p->pool + f->templ, f->nconst * sizeof *regs);
    for (uint32_t i = 0; i < f->nfix; i++) {
        const spv_fixup *x = &p->fixups[f->fix + i];
        regs[x->slot] = (uint64_t)(uintptr_t)((x->kind ? g->local : priv) + x->off);
    }
}

#define R_(s) regs[(s)]

/* Runs a work-item until it finishes, yields or faults.  Returns R_*, or
 * ARSIM_ERR_ILLEGAL_ADDRESS / -1 (negated into -6 / -1). */
static int run_item(group *g, item *it)
{
    const spv_program *p = g->p;
    const spv_ins *code = p->code;
    uint32_t pc = it->pc;
    uint64_t *regs = it->regs;
    for (;;) {
        const spv_ins *I = &code[pc++];
        switch (I->op) {
        case X_MOV:
            for (uint32_t k = 0; k < I->n; k++)
                R_(I->d + k) = R_(I->a + k);
            break;
        case X_BUILTIN: {
            uint64_t v[3];
            builtin(g, it, I->c, v, I->n);
            for (uint32_t k = 0; k < I->n && k < 3; k++)
                R_(I->d + k) = v[k] & mask(I->w);
            break;
        }
        case X_VEXTRACT: {
            uint64_t i = R_(I->b) & mask(I->w);
            R_(I->d) = i < I->n ? R_(I->a + i) : 0;
            break;
        }
        case X_VINSERT: {
            uint64_t i = R_(I->b) & mask(I->w);
            if (i < I->n)
                R_(I->d + i) = R_(I->a);
            break;
        }
        case X_SELECT: R_(I->d) = R_(I->e) ? R_(I->a) : R_(I->b); break;
        case X_IADD: R_(I->d) = (R_(I->a) + R_(I->b)) & mask(I->w); break;
        case X_ISUB: R_(I->d) = (R_(I->a) - R_(I->b)) & mask(I->w); break;
        case X_IMUL: R_(I->d) = (R_(I->a) * R_(I->b)) & mask(I->w); break;
        case X_UDIV: {
            uint64_t b = R_(I->b);
            R_(I->d) = b ? R_(I->a) / b : 0; /* division by zero is undefined: 0 */
            break;
        }
        case X_SDIV: {
            int64_t a = sext(R_(I->a), I->w), b = sext(R_(I->b), I->w);
            R_(I->d) = (b == 0 ? 0 : (b == -1 ? (uint64_t)0 - (uint64_t)a : (uint64_t)(a / b))) & mask(I->w);
            break;
        }
        case X_UMOD: {
            uint64_t b = R_(I->b);
            R_(I->d) = b ? R_(I->a) % b : 0;
            break;
        }
        case X_SREM: case X_SMOD: {
            int64_t a = sext(R_(I->a), I->w), b = sext(R_(I->b), I->w);
            int64_t r = (b == 0 || b == -1) ? 0 : a % b;
            if (I->op == X_SMOD && r != 0 && ((r < 0) != (b < 0)))
                r += b;
            R_(I->d) = (uint64_t)r & mask(I->w);
            break;
        }
        case X_SHL: R_(I->d) = (R_(I->a) << (R_(I->b) & (I->w - 1u))) & mask(I->w); break;
        case X_SHRL: R_(I->d) = R_(I->a) >> (R_(I->b) & (I->w - 1u)); break;
        case X_SHRA:
            R_(I->d) = (uint64_t)(sext(R_(I->a), I->w) >> (R_(I->b) & (I->w - 1u))) & mask(I->w);
            break;
        case X_OR: R_(I->d) = R_(I->a) | R_(I->b); break;
        case X_XOR: R_(I->d) = R_(I->a) ^ R_(I->b); break;
        case X_AND: R_(I->d) = R_(I->a) & R_(I->b); break;
        case X_NOT: R_(I->d) = ~R_(I->a) & mask(I->w); break;
        case X_SNEG: R_(I->d) = (0 - R_(I->a)) & mask(I->w); break;
        case X_IEQ: R_(I->d) = R_(I->a) == R_(I->b); break;
        case X_INE: R_(I->d) = R_(I->a) != R_(I->b); break;
        case X_UGT: R_(I->d) = R_(I->a) > R_(I->b); break;
        case X_UGE: R_(I->d) = R_(I->a) >= R_(I->b); break;
        case X_ULT: R_(I->d) = R_(I->a) < R_(I->b); break;
        case X_ULE: R_(I->d) = R_(I->a) <= R_(I->b); break;
        case X_SGT: R_(I->d) = sext(R_(I->a), I->w) > sext(R_(I->b), I->w); break;
        case X_SGE: R_(I->d) = sext(R_(I->a), I->w) >= sext(R_(I->b), I->w); break;
        case X_SLT: R_(I->d) = sext(R_(I->a), I->w) < sext(R_(I->b), I->w); break;
        case X_SLE: R_(I->d) = sext(R_(I->a), I->w) <= sext(R_(I->b), I->w); break;
        case X_LAND: R_(I->d) = R_(I->a) && R_(I->b); break;
        case X_LOR: R_(I->d) = R_(I->a) || R_(I->b); break;
        case X_LNOT: R_(I->d) = !R_(I->a); break;
        case X_LEQ: R_(I->d) = R_(I->a) == R_(I->b); break;
        case X_LNE: R_(I->d) = R_(I->a) != R_(I->b); break;
        case X_FADD32: R_(I->d) = uf32(f32(R_(I->a)) + f32(R_(I->b))); break;
        case X_FSUB32: R_(I->d) = uf32(f32(R_(I->a)) - f32(R_(I->b))); break;
        case X_FMUL32: R_(I->d) = uf32(f32(R_(I->a)) * f32(R_(I->b))); break;
        case X_FDIV32: R_(I->d) = uf32(f32(R_(I->a)) / f32(R_(I->b))); break;
        case X_FREM32: R_(I->d) = uf32(fmodf(f32(R_(I->a)), f32(R_(I->b)))); break;
        case X_FMOD32: {
            float b = f32(R_(I->b)), r = fmodf(f32(R_(I->a)), b);
            if (r != 0 && signbit(r) != signbit(b))
                r += b;
            R_(I->d) = uf32(r);
            break;
        }
        case X_FNEG32: R_(I->d) = R_(I->a) ^ 0x80000000u; break;
        case X_FADD64: R_(I->d) = uf64(f64(R_(I->a)) + f64(R_(I->b))); break;
        case X_FSUB64: R_(I->d) = uf64(f64(R_(I->a)) - f64(R_(I->b))); break;
        case X_FMUL64: R_(I->d) = uf64(f64(R_(I->a)) * f64(R_(I->b))); break;
        case X_FDIV64: R_(I->d) = uf64(f64(R_(I->a)) / f64(R_(I->b))); break;
        case X_FREM64: R_(I->d) = uf64(fmod(f64(R_(I->a)), f64(R_(I->b)))); break;
        case X_FMOD64: {
            double b = f64(R_(I->b)), r = fmod(f64(R_(I->a)), b);
            if (r != 0 && signbit(r) != signbit(b))
                r += b;
            R_(I->d) = uf64(r);
            break;
        }
        case X_FNEG64: R_(I->d) = R_(I->a) ^ 0x8000000000000000ull; break;
        case X_FCMP:
            R_(I->d) = (uint64_t)fcmp(I->c, fval(R_(I->a), I->w), fval(R_(I->b), I->w));
            break;
        case X_FCLASS: R_(I->d) = fclass(I->c, R_(I->a), I->w); break;
        case X_UCONV: R_(I->d) = R_(I->a) & mask(I->w); break;
        case X_SCONV: R_(I->d) = (uint64_t)sext(R_(I->a), I->c) & mask(I->w); break;
        case X_FTOU: case X_FTOS:
            R_(I->d) = ftoi(fval(R_(I->a), I->c), I->w, I->op == X_FTOS, I->e & 0xFFu);
            break;
        case X_UTOF:
            R_(I->d) = I->w == 64 ? uf64((double)R_(I->a)) : uf32((float)R_(I->a));
            break;
        case X_STOF: {
            int64_t v = sext(R_(I->a), I->c);
            R_(I->d) = I->w == 64 ? uf64((double)v) : uf32((float)v);
            break;
        }
        case X_FCONV:
            R_(I->d) = I->w == 64 ? uf64(fval(R_(I->a), I->c))
                                  : (I->c == 64 ? uf32((float)f64(R_(I->a))) : R_(I->a));
            break;
        case X_LOAD: {
            uintptr_t a = (uintptr_t)R_(I->a);
            if (!addr_ok(g, a, (uint64_t)I->w * I->n)) {
                it->pc = pc - 1;
                return -ARSIM_ERR_ILLEGAL_ADDRESS;
            }
            for (uint32_t k = 0; k < I->n; k++)
                R_(I->d + k) = load_n((const void *)(a + k * I->w), I->w);
            break;
        }
        case X_STORE: {
            uintptr_t a = (uintptr_t)R_(I->a);
            if (!addr_ok(g, a, (uint64_t)I->w * I->n)) {
                it->pc = pc - 1;
                return -ARSIM_ERR_ILLEGAL_ADDRESS;
            }
            for (uint32_t k = 0; k < I->n; k++)
                store_n((void *)(a + k * I->w), I->w, R_(I->b + k));
            break;
        }
        case X_LOADH: case X_STOREH: {
            uintptr_t a = (uintptr_t)R_(I->a);
            if (a % 2 || !addr_ok(g, a, 2)) {
                it->pc = pc - 1;
                return -ARSIM_ERR_ILLEGAL_ADDRESS;
            }
            if (I->op == X_LOADH) {
                float f = half_to_float((uint16_t)load_n((const void *)a, 2));
                R_(I->d) = I->w == 64 ? uf64((double)f) : uf32(f);
            } else {
                double v = fval(R_(I->b), I->w);
                store_n((void *)a, 2, I->w == 64 ? double_to_half(v) : double_to_half((double)(float)v));
            }
            break;
        }
        case X_PTRADD:
            R_(I->d) = R_(I->a) + (uint64_t)sext(R_(I->b), I->w) * I->c + (uint64_t)(int64_t)(int32_t)I->e;
            break;
        case X_ADDI: R_(I->d) = R_(I->a) + (uint64_t)(int64_t)(int32_t)I->e; break;
        case X_MEMCPY: {
            uint64_t n = I->c == SPV_NONE ? I->e : R_(I->c) & mask(I->w);
            uintptr_t d = (uintptr_t)R_(I->a), s = (uintptr_t)R_(I->b);
            if (n && (!addr_ok(g, d, n) || !addr_ok(g, s, n)))
                return -ARSIM_ERR_ILLEGAL_ADDRESS;
            if (n)
                memmove((void *)d, (const void *)s, n);
            break;
        }
        case X_ATOMIC: {
            uintptr_t a = (uintptr_t)R_(I->a);
            uint32_t bytes = I->w / 8u;
            if (a % bytes || !addr_ok(g, a, bytes))
                return -ARSIM_ERR_ILLEGAL_ADDRESS;
            uint64_t v = I->b == SPV_NONE ? 0 : R_(I->b);
            uint64_t c = I->e == SPV_NONE ? 0 : R_(I->e);
            uint64_t r = atomic_op((void *)a, I->w, I->c, v, c);
            if (I->d != SPV_NONE)
                R_(I->d) = r & mask(I->w);
            break;
        }
        case X_JMP: pc = I->a; break;
        case X_BR: pc = R_(I->a) ? I->b : I->c; break;
        case X_SWITCH: {
            uint64_t v = R_(I->a);
            const uint32_t *t = p->aux + I->b;
            uint32_t n = t[0];
            pc = t[1];
            for (uint32_t k = 0; k < n; k++) {
                uint64_t lit = t[2 + 3 * k] | (uint64_t)t[3 + 3 * k] << 32;
                if (lit == v) {
                    pc = t[4 + 3 * k];
                    break;
                }
            }
            break;
        }
        case X_CALL: {
            const spv_func *cur = &p->funcs[it->func];
            const spv_func *f = &p->funcs[I->a];
            uint64_t *nregs = regs + cur->nslots;
            uint8_t *npriv = it->priv + ((cur->priv_bytes + 15u) & ~15u);
            const uint32_t *args = p->aux + I->b;
            uint32_t to = 0;
            for (uint32_t i = 0; i < I->n; i++) {
                uint32_t s = args[2 * i], cn = args[2 * i + 1];
                for (uint32_t k = 0; k < cn; k++)
                    nregs[to++] = R_(s + k);
            }
            it->stack[it->depth++] = (frame){pc, it->func, regs, it->priv};
            enter(g, f, nregs, npriv);
            regs = nregs;
            it->priv = npriv;
            it->func = I->a;
            pc = f->code;
            break;
        }
        case X_RET: {
            if (it->depth == 0) {
                it->pc = pc;
                it->regs = regs;
                return R_DONE;
            }
            frame *fr = &it->stack[--it->depth];
            const spv_ins *call = &code[fr->ret_pc - 1];
            for (uint32_t k = 0; k < I->n; k++)
                fr->regs[call->d + k] = R_(I->a + k);
            regs = fr->regs;
            pc = fr->ret_pc;
            it->func = fr->func;
            it->priv = fr->priv;
            break;
        }
        case X_UNREACHABLE:
            it->pc = pc - 1;
            return -1;
        case X_BARRIER:
            it->pc = pc;
            it->regs = regs;
            return R_BARRIER;
        case X_COLL:
            it->pc = pc - 1;
            it->regs = regs;
            return R_COLL;
        case X_EXT:
            if (I->c >= 141)
                R_(I->d) = ext_int(I->c, I->w, R_(I->a), I->b == SPV_NONE ? 0 : R_(I->b),
                                   I->e == SPV_NONE ? 0 : R_(I->e));
            else
                R_(I->d) = ext_float(I->c, I->w, R_(I->a), I->b == SPV_NONE ? 0 : R_(I->b),
                                     I->e == SPV_NONE ? 0 : R_(I->e));
            break;
        default:
            it->pc = pc - 1;
            return -1;
        }
    }
}

/* ------------------------------------------------------------ collectives */

static uint64_t identity(uint32_t kind, uint32_t w)
{
    switch (kind) {
    case C_IMUL: return 1;
    case C_FMUL: return w == 64 ? uf64(1.0) : uf32(1.0f);
    case C_FMIN: return w == 64 ? uf64(INFINITY) : uf32(INFINITY);
    case C_FMAX: return w == 64 ? uf64(-INFINITY) : uf32(-INFINITY);
    case C_UMIN: case C_AND: return mask(w);
    case C_SMIN: return mask(w) >> 1;
    case C_SMAX: return (mask(w) >> 1) + 1;
    case C_LAND: return 1;
    default: return 0;
    }
}

static uint64_t op2(uint32_t kind, uint32_t w, uint64_t a, uint64_t b)
{
    switch (kind) {
    case C_IADD: return (a + b) & mask(w);
    case C_IMUL: return (a * b) & mask(w);
    case C_FADD: return w == 64 ? uf64(f64(a) + f64(b)) : uf32(f32(a) + f32(b));
    case C_FMUL: return w == 64 ? uf64(f64(a) * f64(b)) : uf32(f32(a) * f32(b));
    case C_FMIN: return w == 64 ? uf64(fmin(f64(a), f64(b))) : uf32(fminf(f32(a), f32(b)));
    case C_FMAX: return w == 64 ? uf64(fmax(f64(a), f64(b))) : uf32(fmaxf(f32(a), f32(b)));
    case C_UMIN: return a < b ? a : b;
    case C_UMAX: return a > b ? a : b;
    case C_SMIN: return sext(a, w) < sext(b, w) ? a : b;
    case C_SMAX: return sext(a, w) > sext(b, w) ? a : b;
    case C_AND: return a & b;
    case C_OR: return a | b;
    case C_XOR: return a ^ b;
    case C_LAND: return a && b;
    case C_LOR: return a || b;
    case C_LXOR: return (a != 0) != (b != 0);
    default: return b;
    }
}

/* Computes collective I for the work-items in m[0..size) (NULL: not taking
 * part), indexed by their id within the sub-group (or the work-group). */
static void collective(group *g, const spv_ins *I, item **m, uint32_t size)
{
    const spv_program *p = g->p;
    uint32_t kind = I->c, gop = I->e & 0xFFu, w = I->w;
    if (I->e & 0x400u)
        return; /* sub-group barrier */
    uint64_t vals[LZ_VALS_MAX];
    uint64_t *v = size <= LZ_VALS_MAX ? vals : malloc(size * sizeof *v);
    if (!v)
        return;
    for (uint32_t i = 0; i < size; i++)
        v[i] = m[i] && I->a != SPV_NONE ? m[i]->regs[I->a] : 0;
    uint32_t first = size;
    for (uint32_t i = 0; i < size; i++)
        if (m[i]) {
            first = i;
            break;
        }
    switch (kind) {
    case C_ALL: case C_ANY: {
        int all = 1, any = 0;
        for (uint32_t i = 0; i < size; i++)
            if (m[i]) {
                all &= v[i] != 0;
                any |= v[i] != 0;
            }
        for (uint32_t i = 0; i < size; i++)
            if (m[i]) m[i]->regs[I->d] = (uint64_t)(kind == C_ALL ? all : any);
        break;
    }
    case C_ELECT:
        for (uint32_t i = 0; i < size; i++)
            if (m[i]) m[i]->regs[I->d] = i == first;
        break;
    case C_BROADCAST_FIRST:
        for (uint32_t i = 0; i < size; i++)
            if (m[i]) m[i]->regs[I->d] = v[first];
        break;
    case C_BALLOT: {
        uint64_t bits = 0;
        for (uint32_t i = 0; i < size && i < 64; i++)
            if (m[i] && v[i]) bits |= 1ull << i;
        for (uint32_t i = 0; i < size; i++)
            if (m[i]) {
                m[i]->regs[I->d] = bits & 0xFFFFFFFFu;
                m[i]->regs[I->d + 1] = bits >> 32;
                m[i]->regs[I->d + 2] = 0;
                m[i]->regs[I->d + 3] = 0;
            }
        break;
    }
    case C_BROADCAST: case C_SHUFFLE: case C_SHUFFLE_XOR: case C_SHUFFLE_UP: case C_SHUFFLE_DOWN:
    case C_INTEL_SHUFFLE_DOWN: case C_INTEL_SHUFFLE_UP: {
        uint64_t outs[LZ_VALS_MAX];
        uint64_t *out = size <= LZ_VALS_MAX ? outs : calloc(size, sizeof *out);
        if (!out)
            break;
        for (uint32_t i = 0; i < size; i++) {
            if (!m[i])
                continue;
            uint64_t *r = m[i]->regs;
            int64_t src;
            uint64_t val = 0;
            int from_other = 0;
            switch (kind) {
            case C_BROADCAST:
                if (I->n > 1) { /* a work-group local id given as a vector */
                    src = (int64_t)(r[I->b] + g->size[0] * (r[I->b + 1] + (I->n > 2 ? g->size[1] * r[I->b + 2] : 0)));
                } else {
                    src = (int64_t)r[I->b];
                }
                break;
            case C_SHUFFLE: src = (int64_t)(r[I->b] & 0xFFFFFFFFu); break;
            case C_SHUFFLE_XOR: src = (int64_t)(i ^ (r[I->b] & 0xFFFFFFFFu)); break;
            case C_SHUFFLE_UP: src = (int64_t)i - (int64_t)(r[I->b] & 0xFFFFFFFFu); break;
            case C_SHUFFLE_DOWN: src = (int64_t)i + (int64_t)(r[I->b] & 0xFFFFFFFFu); break;
            default: {
                uint32_t other = p->aux[I->b], delta = (uint32_t)r[p->aux[I->b + 1]];
                if (kind == C_INTEL_SHUFFLE_DOWN) {
                    src = (int64_t)i + delta; /* current, then next */
                    if (src >= (int64_t)size) {
                        src -= size;
                        from_other = 1;
                    }
                } else {
                    src = (int64_t)i - delta; /* previous, then current */
                    if (src < 0) {
                        src += size;
                        from_other = 1;
                    } else {
                        from_other = 2;
                    }
                }
                if (src >= 0 && src < (int64_t)size && m[src]) {
                    if (kind == C_INTEL_SHUFFLE_DOWN)
                        val = from_other ? m[src]->regs[other] : v[src];
                    else
                        val = from_other == 2 ? m[src]->regs[other] : v[src];
                }
                out[i] = val;
                continue;
            }
            }
            out[i] = src >= 0 && src < (int64_t)size && m[src] ? v[src] : 0;
        }
        for (uint32_t i = 0; i < size; i++)
            if (m[i]) m[i]->regs[I->d] = out[i];
        if (size > LZ_VALS_MAX)
            free(out);
        break;
    }
    default: { /* arithmetic: reduce, inclusive or exclusive scan, in id order */
        uint64_t acc = identity(kind, w);
        if (gop == 0) {
            for (uint32_t i = 0; i < size; i++)
                if (m[i]) acc = op2(kind, w, acc, v[i]);
            for (uint32_t i = 0; i < size; i++)
                if (m[i]) m[i]->regs[I->d] = acc;
        } else {
            for (uint32_t i = 0; i < size; i++) {
                if (!m[i])
                    continue;
                if (gop == 2)
                    m[i]->regs[I->d] = acc;
                acc = op2(kind, w, acc, v[i]);
                if (gop == 1)
                    m[i]->regs[I->d] = acc;
            }
        }
        break;
    }
    }
    if (v != vals)
        free(v);
}

/* ------------------------------------------------------------ work-groups */

static void start_item(group *g, item *it)
{
    const spv_program *p = g->p;
    const spv_kernel *k = g->k;
    const spv_func *f = &p->funcs[k->func];
    uint64_t *regs = it->regs;
    uint32_t s = 0;
    for (uint32_t i = 0; i < k->info.num_params; i++) {
        const uint8_t *src = g->params[i];
        for (uint32_t c = 0; c < k->param_n[i]; c++)
            regs[s++] = load_n(src + c * k->param_bytes[i], k->param_bytes[i]);
    }
    enter(g, f, regs, it->priv);
    it->pc = f->code;
    it->func = k->func;
    it->depth = 0;
    it->state = S_RUN;
}

/* Runs one work-group; 0, -1 or -ARSIM_ERR_ILLEGAL_ADDRESS. */
static int run_group(group *g)
{
    const spv_program *p = g->p;
    const spv_func *f = &p->funcs[g->k->func];
    if (g->local_len)
        memset(g->local, 0, g->local_len);
    for (uint32_t i = 0; i < g->nitems; i++) {
        item *it = &g->items[i];
        it->regs = g->regs + (size_t)i * f->max_slots;
        it->priv = g->priv + (size_t)i * f->max_priv;
        it->stack = g->frames + (size_t)i * f->max_depth;
        start_item(g, it);
    }
    item *members[SPV_SUBGROUP_SIZE];
    for (;;) {
        uint32_t done = 0, at_barrier = 0;
        for (uint32_t i = 0; i < g->nitems; i++) {
            item *it = &g->items[i];
            if (it->state == S_RUN) {
                int r = run_item(g, it);
                if (r < 0)
                    return r;
                it->state = r == R_DONE ? S_DONE : r == R_BARRIER ? S_BARRIER : S_COLL;
            }
            done += it->state == S_DONE;
            at_barrier += it->state == S_BARRIER;
        }
        if (done == g->nitems)
            return 0;
        int released = 0;
        /* Sub-group collectives first: a sub-group may have to get through
         * one before it reaches the barrier or work-group collective the
         * others wait at. */
        for (uint32_t s = 0; s < subgroup_count(g); s++) {
            uint32_t lo = s * SPV_SUBGROUP_SIZE;
            uint32_t size = g->nitems - lo < SPV_SUBGROUP_SIZE ? g->nitems - lo : SPV_SUBGROUP_SIZE;
            uint32_t pc0 = SPV_NONE;
            for (uint32_t i = 0; i < size && pc0 == SPV_NONE; i++) {
                const item *it = &g->items[lo + i];
                if (it->state == S_COLL && !(p->code[it->pc].e & C_SCOPE_WORKGROUP))
                    pc0 = it->pc;
            }
            if (pc0 == SPV_NONE)
                continue;
            const spv_ins *I = &p->code[pc0];
            uint32_t taking = 0;
            for (uint32_t i = 0; i < size; i++) {
                item *it = &g->items[lo + i];
                members[i] = it->state == S_COLL && it->pc == pc0 ? it : NULL;
                taking += members[i] != NULL;
            }
            /* A uniform operation needs the whole sub-group. */
            if (!(I->e & C_NON_UNIFORM) && taking != size)
                return -1;
            collective(g, I, members, size);
            for (uint32_t i = 0; i < size; i++)
                if (members[i]) {
                    members[i]->pc++;
                    members[i]->state = S_RUN;
                }
            released = 1;
        }
        if (released)
            continue;
        /* Work-group collectives: every work-item at the same one. */
        const item *i0 = &g->items[0];
        if (i0->state == S_COLL) {
            for (uint32_t i = 0; i < g->nitems; i++)
                if (g->items[i].state != S_COLL || g->items[i].pc != i0->pc)
                    return -1;
            item **m = malloc(g->nitems * sizeof *m);
            if (!m)
                return -1;
            for (uint32_t i = 0; i < g->nitems; i++)
                m[i] = &g->items[i];
            collective(g, &p->code[i0->pc], m, g->nitems);
            free(m);
            for (uint32_t i = 0; i < g->nitems; i++) {
                g->items[i].pc++;
                g->items[i].state = S_RUN;
            }
            continue;
        }
        if (at_barrier == g->nitems) {
            for (uint32_t i = 0; i < g->nitems; i++)
                g->items[i].state = S_RUN;
            continue;
        }
        return -1; /* barrier divergence: some finished or wait elsewhere */
    }
}

typedef struct slice {
    const spv_kernel *k;
    const ar_launch *l;
    void **params;
    uint64_t begin, end;
    int rc;
} slice;

static int run_blocks(const spv_kernel *k, const ar_launch *l, void **params, uint64_t begin,
                      uint64_t end)
{
    const spv_program *p = k->prog;
    const spv_func *f = &p->funcs[k->func];
    group g;
    memset(&g, 0, sizeof g);
    g.p = p;
    g.k = k;
    g.l = l;
    g.params = params;
    g.size[0] = l->block.x;
    g.size[1] = l->block.y;
    g.size[2] = l->block.z;
    g.nitems = l->block.x * l->block.y * l->block.z;
    g.items = calloc(g.nitems, sizeof *g.items);
    g.regs = calloc((size_t)g.nitems * f->max_slots, sizeof *g.regs);
    g.priv_total = (size_t)g.nitems * f->max_priv;
    g.priv = calloc(1, g.priv_total ? g.priv_total : 1);
    g.frames = calloc((size_t)g.nitems * f->max_depth, sizeof *g.frames);
    g.local_len = p->local_bytes;
    g.local = calloc(1, g.local_len ? g.local_len : 1);
    int rc = 0;
    if (!g.items || !g.regs || !g.priv || !g.frames || !g.local) {
        rc = -1;
        goto out;
    }
    for (uint32_t i = 0; i < g.nitems; i++) {
        item *it = &g.items[i];
        it->linear = i;
        it->lid[0] = i % l->block.x;
        it->lid[1] = i / l->block.x % l->block.y;
        it->lid[2] = i / l->block.x / l->block.y;
    }
    for (uint64_t b = begin; b < end && rc == 0; b++) {
        g.gid[0] = (uint32_t)(b % l->grid.x);
        g.gid[1] = (uint32_t)(b / l->grid.x % l->grid.y);
        g.gid[2] = (uint32_t)(b / l->grid.x / l->grid.y);
        rc = run_group(&g);
    }
out:
    free(g.items);
    free(g.regs);
    free(g.priv);
    free(g.frames);
    free(g.local);
    return rc == 0 ? 0 : rc == -ARSIM_ERR_ILLEGAL_ADDRESS ? ARSIM_ERR_ILLEGAL_ADDRESS : -1;
}

static void *run_slice(void *arg)
{
    slice *s = arg;
    s->rc = run_blocks(s->k, s->l, s->params, s->begin, s->end);
    return NULL;
}

static unsigned cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1u : n > MAX_THREADS ? MAX_THREADS : (unsigned)n;
}

int spv_kernel_run(void *kernel_ctx, const ar_launch *l, void **params)
{
    const spv_kernel *k = kernel_ctx;
    uint64_t nblocks = (uint64_t)l->grid.x * l->grid.y * l->grid.z;
    uint64_t span = l->block_end - l->block_begin;
    /* The engine splits big grids itself when asked to
     * (ARUNTIME_SIM_KERNEL_THREADS); otherwise spread the groups over the
     * cores here, since interpreted work-groups are slow. */
    uint64_t threads = span == nblocks ? cpu_count() : 1;
    if (threads > span)
        threads = span;
    if (threads <= 1)
        return run_blocks(k, l, params, l->block_begin, l->block_end);
    slice sl[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (uint64_t i = 0; i < threads; i++) {
        sl[i] = (slice){k, l, params, l->block_begin + span * i / threads,
                        l->block_begin + span * (i + 1) / threads, 0};
        if (i)
            started[i] = pthread_create(&tid[i], NULL, run_slice, &sl[i]) == 0;
    }
    run_slice(&sl[0]);
    int rc = sl[0].rc;
    for (uint64_t i = 1; i < threads; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            run_slice(&sl[i]);
        if (sl[i].rc && rc != ARSIM_ERR_ILLEGAL_ADDRESS)
            rc = sl[i].rc;
    }
    return rc;
}
