/* The PTX interpreter: runs a decoded .entry over a launch's blocks.
 *
 * A block runs on one host thread, a warp of 32 lanes at a time; blocks are
 * spread over the machine's cores.  Each instruction executes for the lanes
 * of the warp's active mask in one loop, so dispatch is paid once per warp.
 *
 * Divergence: each lane that is not active keeps its own pc.  The warp runs
 * the lanes at the lowest pc first and merges lanes as soon as the running
 * group reaches a waiting lane's pc, so branches reconverge at their
 * immediate post-dominator in the structured code compilers write.  Warp-
 * synchronous instructions (shfl.sync, vote.sync, ...) wait until every
 * named lane that can still arrive has arrived.  bar.sync parks a warp until
 * every warp of the block has reached it (or exited).
 */
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ptx_internal.h"

#define FULL 0xffffffffu

enum { R_DONE = 0, R_BARRIER = 1 };
/* Errors travel as negative arsim statuses. */
#define E_FAULT (-(int)ARSIM_ERR_ILLEGAL_ADDRESS)
#define E_FAIL (-1000)

typedef uint64_t lanes_t[PTX_LANES];

/* ------------------------------------------------------------- per-thread state */

typedef struct range {
    uintptr_t lo, hi;
} range;

typedef struct frame {
    const pfunc *f;
    lanes_t *R;
    uint8_t *pf;       /* per-lane .param frame: lane * f->frame_bytes */
    uint32_t local_base; /* offset of this frame's depot in the lane's stack */
    uint32_t pc[PTX_LANES];
    uint32_t active, waiting, parked, blocked, done;
    uint32_t cur_pc, next_pc, nopark_pc;
    uint32_t exited;   /* lanes that ran exit inside this frame (calls) */
    /* Cache of the waiting lanes' distinct pcs, sorted, and the lowest pc
     * of an unparked waiting lane: rebuilt only when the sets change, so a
     * branch taken by a converged group next to waiting lanes stays cheap. */
    int wdirty;
    uint32_t nwpcs, wmin_unparked;
    uint32_t wpcs[PTX_LANES];
    uint8_t cc[PTX_LANES];
} frame;

typedef struct warp {
    frame top;
    uint32_t valid;    /* lanes that exist */
    uint32_t exited;
    uint32_t id;
    int finished;
    uint32_t tid[3][PTX_LANES];
    uint8_t *local;    /* lane * stack bytes */
} warp;

typedef struct block_ctx {
    const pmodule *mod;
    const pfunc *entry;
    const ar_launch *L;
    uint8_t *params;
    uint8_t *shared;
    uint32_t shared_size, dyn_size;
    uint32_t nthreads, nwarps;
    uint32_t stack;
    uint32_t ctaid[3];
    warp *warps;
    range cache[8];
    unsigned cache_next;
} block_ctx;

/* ------------------------------------------------------------- helpers */

static inline float f32(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint64_t bf32(float f)
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
static inline uint64_t bf64(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}
static inline float ftz32(float f)
{
    return fpclassify(f) == FP_SUBNORMAL ? copysignf(0.0f, f) : f;
}

static inline double h2d(uint16_t h)
{
    _Float16 x;
    memcpy(&x, &h, 2);
    return (double)x;
}
static inline uint16_t d2h(double d)
{
    if (d != d)
        return 0x7fff; /* the canonical NaN cvt writes */
    _Float16 x = (_Float16)d;
    uint16_t h;
    memcpy(&h, &x, 2);
    return h;
}
static inline double bf2d(uint16_t b) { return (double)f32((uint64_t)b << 16); }
/* double -> bf16: first to float rounding to odd (toward zero, then the
 * last bit set if inexact), which keeps enough bits for the final rounding
 * to be the one a direct conversion would make. */
__attribute__((optimize("rounding-math"), noinline)) static uint16_t d2bf(double d, int mode)
{
    if (isnan(d))
        return 0x7fff;
    int old = fegetround();
    fesetround(FE_TOWARDZERO);
    volatile float f = (float)d;
    fesetround(old);
    uint32_t u = (uint32_t)bf32(f);
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

static inline int ibits(int t)
{
    switch (t) {
    case T_B8: case T_U8: case T_S8: return 8;
    case T_B16: case T_U16: case T_S16: case T_F16: case T_BF16: return 16;
    case T_B32: case T_U32: case T_S32: case T_F32: case T_F16X2: case T_BF16X2: return 32;
    case T_PRED: return 1;
    default: return 64;
    }
}
static inline int is_signed(int t) { return t == T_S8 || t == T_S16 || t == T_S32 || t == T_S64; }
static inline uint64_t tmask(int bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }
static inline int64_t sxt(uint64_t v, int bits)
{
    return bits >= 64 ? (int64_t)v : (int64_t)(v << (64 - bits)) >> (64 - bits);
}

#define FOR_LANES(mask, ...)                                                                     \
    do {                                                                                          \
        uint32_t m_ = (mask);                                                                     \
        if (m_ == FULL) {                                                                         \
            for (int l = 0; l < PTX_LANES; l++) {                                                 \
                __VA_ARGS__;                                                                      \
            }                                                                                     \
        } else {                                                                                  \
            while (m_) {                                                                          \
                int l = __builtin_ctz(m_);                                                        \
                m_ &= m_ - 1;                                                                     \
                __VA_ARGS__;                                                                      \
            }                                                                                     \
        }                                                                                         \
    } while (0)

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
__attribute__((optimize("rounding-math"), noinline)) static uint64_t
directed(int op, int type, int mode, uint64_t a, uint64_t b, uint64_t c)
{
    int old = fegetround();
    fesetround(fe_mode(mode));
    uint64_t r = 0;
    if (type == T_F32) {
        volatile float x = f32(a), y = f32(b), z = f32(c), v = 0;
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
        r = bf32(v);
    } else {
        volatile double x = f64(a), y = f64(b), z = f64(c), v = 0;
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
        r = bf64(v);
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
        r = bf32(f);
    } else if (dtype == T_F64) {
        volatile double d = is_signed_src ? (double)(int64_t)v : (double)v;
        r = bf64(d);
    } else if (dtype == T_F16) {
        /* |v| < 2^64: through double is one rounding except for huge values,
         * which overflow half anyway. */
        volatile double d = is_signed_src ? (double)(int64_t)v : (double)v;
        r = d2h(d);
    } else {
        volatile double d = is_signed_src ? (double)(int64_t)v : (double)v;
        r = d2bf(d, mode);
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
        r = bf32(f);
    } else if (dtype == T_F16) {
        volatile double x = d;
        r = d2h(x);
    } else {
        r = d2bf(d, mode);
    }
    fesetround(old);
    return r;
}

static double to_double(uint64_t v, int t)
{
    switch (t) {
    case T_F32: return f32(v);
    case T_F64: return f64(v);
    case T_F16: return h2d((uint16_t)v);
    case T_BF16: return bf2d((uint16_t)v);
    default: return 0;
    }
}

static int is_ftype(int t) { return t == T_F16 || t == T_BF16 || t == T_F32 || t == T_F64; }

/* One cvt.  Float-to-int saturates (NaN gives 0), as PTX defines. */
static uint64_t cvt_one(uint64_t x, int dt, int st, int mode, unsigned flags)
{
    int db = ibits(dt), sb = ibits(st);
    if (!is_ftype(dt) && !is_ftype(st)) {
        int64_t sv = is_signed(st) ? sxt(x, sb) : (int64_t)(x & tmask(sb));
        if (flags & FL_SAT) {
            if (is_signed(dt)) {
                int64_t lo = -(int64_t)(1ull << (db - 1)) , hi = (int64_t)((1ull << (db - 1)) - 1);
                if (db == 64) { lo = INT64_MIN; hi = INT64_MAX; }
                if (!is_signed(st) && (x & tmask(sb)) > (uint64_t)hi)
                    sv = hi;
                else if (sv < lo)
                    sv = lo;
                else if (sv > hi)
                    sv = hi;
            } else {
                uint64_t hi = tmask(db);
                if (is_signed(st) && sv < 0)
                    sv = 0;
                else if ((uint64_t)sv > hi && !(is_signed(st) && sv < 0))
                    sv = (int64_t)hi;
            }
        }
        return is_signed(dt) ? (uint64_t)sxt((uint64_t)sv, db) : (uint64_t)sv & tmask(db);
    }
    if (!is_ftype(st)) { /* int -> float */
        uint64_t v = is_signed(st) ? (uint64_t)sxt(x, sb) : x & tmask(sb);
        int m = mode == RND_NONE ? RND_RN : mode;
        if (m == RND_RN && dt == T_F32)
            return bf32(is_signed(st) ? (float)(int64_t)v : (float)v);
        if (m == RND_RN && dt == T_F64)
            return bf64(is_signed(st) ? (double)(int64_t)v : (double)v);
        return int_to_float(v, is_signed(st), dt, m);
    }
    double d = to_double(x, st);
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
            return (uint64_t)sxt((uint64_t)v, db);
        }
        double hi = ldexp(1.0, db);
        uint64_t v = d <= 0 ? 0 : d >= hi ? tmask(db) : (uint64_t)d;
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
        r = bf64(d);
    } else if (dt == T_F32 && (st != T_F64 || mode == RND_NONE || mode == RND_RN || mode >= RND_RNI)) {
        float f = (float)d;
        if (flags & FL_FTZ)
            f = ftz32(f);
        r = bf32(f);
    } else if (dt == T_F16 && (mode == RND_NONE || mode == RND_RN || mode >= RND_RNI)) {
        r = d2h(d);
    } else if (dt == T_BF16 && (mode == RND_NONE || mode == RND_RN || mode >= RND_RNI)) {
        r = d2bf(d, RND_RN);
    } else {
        r = narrow_float(d, dt, mode);
        if (dt == T_F32 && (flags & FL_FTZ))
            r = bf32(ftz32(f32(r)));
    }
    return r;
}

/* ------------------------------------------------------------- memory */

/* A global access: the module's own variables, else the engine's check
 * (which records the fault for arsim_fault_report).  Hits are cached per
 * block context: the allocations cannot change while a kernel runs. */
static int global_ok(block_ctx *b, uintptr_t p, size_t n, int wr)
{
    for (int i = 0; i < 8; i++)
        if (p >= b->cache[i].lo && p + n <= b->cache[i].hi && p + n >= p)
            return 1;
    uintptr_t lo = 0, hi = 0;
    for (uint32_t i = 0; i < b->mod->nvars; i++) {
        uintptr_t vlo = (uintptr_t)b->mod->vars[i].data;
        if (p >= vlo && p < vlo + b->mod->vars[i].size) {
            lo = vlo;
            hi = vlo + b->mod->vars[i].size;
            break;
        }
    }
    if (!hi) {
        if (arsim_check_access((const void *)p, n, wr) != ARSIM_OK)
            return 0;
        arsim_alloc a;
        if (arsim_mem_lookup((const void *)p, &a) != ARSIM_OK)
            return 0;
        lo = (uintptr_t)a.base;
        hi = lo + a.size;
    }
    if (p + n > hi || p + n < p)
        return 0;
    b->cache[b->cache_next++ & 7] = (range){lo, hi};
    return 1;
}

/* The host address of an access of n bytes by lane l, or NULL (a fault). */
static inline uint8_t *mem_at(block_ctx *b, warp *w, frame *fr, int space, uint64_t addr,
                              size_t n, int l, int wr)
{
    if (n > 1 && (addr & (n - 1)) && (n & (n - 1)) == 0)
        return NULL; /* misaligned */
    switch (space) {
    case S_SHARED:
        return addr + n <= b->shared_size ? b->shared + addr : NULL;
    case S_LOCAL:
        return addr + n <= b->stack ? w->local + (size_t)l * b->stack + addr : NULL;
    case S_PARAM:
        return addr + n <= fr->f->param_bytes ? b->params + addr : NULL;
    case S_FRAME:
        return addr + n <= fr->f->frame_bytes ? fr->pf + (size_t)l * fr->f->frame_bytes + addr : NULL;
    case S_GENERIC: {
        uintptr_t p = (uintptr_t)addr;
        if (p >= (uintptr_t)b->shared && p + n <= (uintptr_t)b->shared + b->shared_size)
            return (uint8_t *)p;
        uintptr_t lb = (uintptr_t)w->local + (size_t)l * b->stack;
        if (p >= lb && p + n <= lb + b->stack)
            return (uint8_t *)p;
        if (fr->f->is_entry && p >= (uintptr_t)b->params && p + n <= (uintptr_t)b->params + fr->f->param_bytes)
            return (uint8_t *)p;
        return global_ok(b, p, n, wr) ? (uint8_t *)p : NULL;
    }
    default:
        return global_ok(b, (uintptr_t)addr, n, wr) ? (uint8_t *)(uintptr_t)addr : NULL;
    }
}

static inline uint64_t load_bytes(const uint8_t *p, int t)
{
    switch (ptx_type_size(t)) {
    case 1: return is_signed(t) ? (uint64_t)(int64_t)*(const int8_t *)p : *p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return is_signed(t) ? (uint64_t)(int64_t)(int16_t)v : v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return is_signed(t) ? (uint64_t)(int64_t)(int32_t)v : v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static inline void store_bytes(uint8_t *p, int t, uint64_t v)
{
    switch (ptx_type_size(t)) {
    case 1: *p = (uint8_t)v; break;
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

static uint64_t atomic_op(uint8_t *p, int t, int op, uint64_t b, uint64_t c)
{
    int sz = ptx_type_size(t);
    if (sz == 4) {
        uint32_t *q = (uint32_t *)p, v = (uint32_t)b;
        switch (op) {
        case ATOM_ADD:
            if (t == T_F32) {
                uint32_t old = __atomic_load_n(q, __ATOMIC_RELAXED), nw;
                do {
                    nw = (uint32_t)bf32(f32(old) + f32(v));
                } while (!__atomic_compare_exchange_n(q, &old, nw, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
                return old;
            }
            return __atomic_fetch_add(q, v, __ATOMIC_SEQ_CST);
        case ATOM_EXCH: return __atomic_exchange_n(q, v, __ATOMIC_SEQ_CST);
        case ATOM_CAS: {
            uint32_t exp = v;
            __atomic_compare_exchange_n(q, &exp, (uint32_t)c, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return exp;
        }
        case ATOM_AND: return __atomic_fetch_and(q, v, __ATOMIC_SEQ_CST);
        case ATOM_OR: return __atomic_fetch_or(q, v, __ATOMIC_SEQ_CST);
        case ATOM_XOR: return __atomic_fetch_xor(q, v, __ATOMIC_SEQ_CST);
        default: {
            uint32_t old = __atomic_load_n(q, __ATOMIC_RELAXED), nw;
            do {
                switch (op) {
                case ATOM_MIN: nw = is_signed(t) ? ((int32_t)old < (int32_t)v ? old : v) : (old < v ? old : v); break;
                case ATOM_MAX: nw = is_signed(t) ? ((int32_t)old > (int32_t)v ? old : v) : (old > v ? old : v); break;
                case ATOM_INC: nw = old >= v ? 0 : old + 1; break;
                default: nw = (old == 0 || old > v) ? v : old - 1; break; /* dec */
                }
            } while (!__atomic_compare_exchange_n(q, &old, nw, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
            return old;
        }
        }
    }
    uint64_t *q = (uint64_t *)p, v = b;
    switch (op) {
    case ATOM_ADD:
        if (t == T_F64) {
            uint64_t old = __atomic_load_n(q, __ATOMIC_RELAXED), nw;
            do {
                nw = bf64(f64(old) + f64(v));
            } while (!__atomic_compare_exchange_n(q, &old, nw, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
            return old;
        }
        return __atomic_fetch_add(q, v, __ATOMIC_SEQ_CST);
    case ATOM_EXCH: return __atomic_exchange_n(q, v, __ATOMIC_SEQ_CST);
    case ATOM_CAS: {
        uint64_t exp = v;
        __atomic_compare_exchange_n(q, &exp, c, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return exp;
    }
    case ATOM_AND: return __atomic_fetch_and(q, v, __ATOMIC_SEQ_CST);
    case ATOM_OR: return __atomic_fetch_or(q, v, __ATOMIC_SEQ_CST);
    case ATOM_XOR: return __atomic_fetch_xor(q, v, __ATOMIC_SEQ_CST);
    default: {
        uint64_t old = __atomic_load_n(q, __ATOMIC_RELAXED), nw;
        do {
            switch (op) {
            case ATOM_MIN: nw = is_signed(t) ? ((int64_t)old < (int64_t)v ? old : v) : (old < v ? old : v); break;
            case ATOM_MAX: nw = is_signed(t) ? ((int64_t)old > (int64_t)v ? old : v) : (old > v ? old : v); break;
            case ATOM_INC: nw = old >= v ? 0 : old + 1; break;
            default: nw = (old == 0 || old > v) ? v : old - 1; break;
            }
        } while (!__atomic_compare_exchange_n(q, &old, nw, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
        return old;
    }
    }
}

/* ------------------------------------------------------------- scheduling */

static void wcache(frame *fr)
{
    if (!fr->wdirty)
        return;
    fr->wdirty = 0;
    fr->nwpcs = 0;
    fr->wmin_unparked = PTX_NONE;
    for (uint32_t m = fr->waiting; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        uint32_t pc = fr->pc[l];
        if (!(fr->parked >> l & 1) && pc < fr->wmin_unparked)
            fr->wmin_unparked = pc;
        uint32_t k = 0;
        while (k < fr->nwpcs && fr->wpcs[k] < pc)
            k++;
        if (k < fr->nwpcs && fr->wpcs[k] == pc)
            continue;
        memmove(&fr->wpcs[k + 1], &fr->wpcs[k], (fr->nwpcs - k) * sizeof fr->wpcs[0]);
        fr->wpcs[k] = pc;
        fr->nwpcs++;
    }
}

static void recompute_next(frame *fr)
{
    wcache(fr);
    uint32_t best = PTX_NONE;
    for (uint32_t k = 0; k < fr->nwpcs; k++)
        if (fr->wpcs[k] >= fr->cur_pc) {
            best = fr->wpcs[k];
            break;
        }
    fr->next_pc = best;
}

/* Picks the lowest-pc group of waiting lanes to run; 0 if none can run. */
static int reschedule(frame *fr)
{
    uint32_t cand = fr->waiting & ~fr->parked;
    int forced = 0;
    if (!cand) {
        cand = fr->waiting & fr->parked;
        forced = 1;
    }
    if (!cand)
        return 0;
    uint32_t best = PTX_NONE;
    for (uint32_t m = cand; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        if (fr->pc[l] < best)
            best = fr->pc[l];
    }
    uint32_t act = 0;
    for (uint32_t m = fr->waiting; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        if (fr->pc[l] == best && (forced || !(fr->parked >> l & 1)))
            act |= 1u << l;
    }
    fr->active = act;
    fr->waiting &= ~act;
    fr->parked &= ~act;
    fr->wdirty = 1;
    fr->cur_pc = best;
    fr->nopark_pc = forced ? best : PTX_NONE;
    recompute_next(fr);
    return 1;
}

static void merge(frame *fr)
{
    uint32_t add = 0;
    for (uint32_t m = fr->waiting; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        if (fr->pc[l] == fr->cur_pc)
            add |= 1u << l;
    }
    fr->active |= add;
    fr->waiting &= ~add;
    fr->parked &= ~add;
    fr->wdirty = 1;
    recompute_next(fr);
}

/* Moves lanes to the waiting set at pc. */
static void wait_at(frame *fr, uint32_t lanes, uint32_t pc)
{
    for (uint32_t m = lanes; m; m &= m - 1)
        fr->pc[__builtin_ctz(m)] = pc;
    fr->waiting |= lanes;
    fr->wdirty = 1;
}

/* ------------------------------------------------------------- frames */

static void fill_specials(block_ctx *b, warp *w, frame *fr)
{
    const pfunc *f = fr->f;
    const ar_launch *L = b->L;
    for (uint32_t i = 0; i < f->nspecials; i++) {
        uint64_t *D = fr->R[f->specials[i].slot];
        switch (f->specials[i].kind) {
        case SP_TID_X: for (int l = 0; l < 32; l++) D[l] = w->tid[0][l]; break;
        case SP_TID_Y: for (int l = 0; l < 32; l++) D[l] = w->tid[1][l]; break;
        case SP_TID_Z: for (int l = 0; l < 32; l++) D[l] = w->tid[2][l]; break;
        case SP_NTID_X: for (int l = 0; l < 32; l++) D[l] = L->block.x; break;
        case SP_NTID_Y: for (int l = 0; l < 32; l++) D[l] = L->block.y; break;
        case SP_NTID_Z: for (int l = 0; l < 32; l++) D[l] = L->block.z; break;
        case SP_CTAID_X: for (int l = 0; l < 32; l++) D[l] = b->ctaid[0]; break;
        case SP_CTAID_Y: for (int l = 0; l < 32; l++) D[l] = b->ctaid[1]; break;
        case SP_CTAID_Z: for (int l = 0; l < 32; l++) D[l] = b->ctaid[2]; break;
        case SP_NCTAID_X: for (int l = 0; l < 32; l++) D[l] = L->grid.x; break;
        case SP_NCTAID_Y: for (int l = 0; l < 32; l++) D[l] = L->grid.y; break;
        case SP_NCTAID_Z: for (int l = 0; l < 32; l++) D[l] = L->grid.z; break;
        case SP_LANEID: for (int l = 0; l < 32; l++) D[l] = (uint64_t)l; break;
        case SP_WARPID: for (int l = 0; l < 32; l++) D[l] = w->id; break;
        case SP_NWARPID: for (int l = 0; l < 32; l++) D[l] = 64; break;
        case SP_SMID: for (int l = 0; l < 32; l++) D[l] = 0; break;
        case SP_NSMID: for (int l = 0; l < 32; l++) D[l] = 1; break;
        case SP_GRIDID: for (int l = 0; l < 32; l++) D[l] = 1; break;
        case SP_LANEMASK_EQ: for (int l = 0; l < 32; l++) D[l] = 1u << l; break;
        case SP_LANEMASK_LT: for (int l = 0; l < 32; l++) D[l] = (1u << l) - 1; break;
        case SP_LANEMASK_LE: for (int l = 0; l < 32; l++) D[l] = (uint32_t)((2ull << l) - 1); break;
        case SP_LANEMASK_GT: for (int l = 0; l < 32; l++) D[l] = (uint32_t)~((2ull << l) - 1); break;
        case SP_LANEMASK_GE: for (int l = 0; l < 32; l++) D[l] = (uint32_t)~((1u << l) - 1); break;
        case SP_DYN_SMEM: for (int l = 0; l < 32; l++) D[l] = b->dyn_size; break;
        case SP_TOTAL_SMEM: for (int l = 0; l < 32; l++) D[l] = b->shared_size; break;
        case SP_LOCAL_BASE: for (int l = 0; l < 32; l++) D[l] = fr->local_base; break;
        default: for (int l = 0; l < 32; l++) D[l] = 0; break;
        }
    }
}

static void fill_consts(frame *fr)
{
    const pfunc *f = fr->f;
    for (uint32_t i = 0; i < f->nconsts; i++) {
        uint64_t *D = fr->R[f->consts[i].slot], v = f->consts[i].value;
        for (int l = 0; l < 32; l++)
            D[l] = v;
    }
}

static int run_frame(block_ctx *b, warp *w, frame *fr);

static int do_call(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    const pfunc *cf = &b->mod->funcs[in->target];
    const pcall *c = &fr->f->calls[in->aux];
    uint32_t base = fr->local_base + ((fr->f->local_bytes + 15u) & ~15u);
    if ((uint64_t)base + cf->local_bytes > b->stack)
        return E_FAIL; /* call stack overflow (deep recursion) */
    frame callee;
    memset(&callee, 0, sizeof callee);
    callee.f = cf;
    callee.local_base = base;
    callee.R = malloc((size_t)(cf->nslots ? cf->nslots : 1) * sizeof(lanes_t));
    callee.pf = calloc(PTX_LANES, cf->frame_bytes ? cf->frame_bytes : 1);
    if (!callee.R || !callee.pf) {
        free(callee.R);
        free(callee.pf);
        return E_FAIL;
    }
    fill_consts(&callee);
    fill_specials(b, w, &callee);
    FOR_LANES(m, {
        for (int k = 0; k < c->nargs; k++)
            memcpy(callee.pf + (size_t)l * cf->frame_bytes + cf->params[k].offset,
                   fr->pf + (size_t)l * fr->f->frame_bytes + c->arg_off[k], cf->params[k].size);
    });
    callee.active = m;
    callee.cur_pc = 0;
    callee.next_pc = callee.nopark_pc = PTX_NONE;
    int r = run_frame(b, w, &callee);
    if (r >= 0) {
        uint32_t back = m & ~callee.exited;
        FOR_LANES(back, {
            for (int k = 0; k < c->nrets; k++)
                memcpy(fr->pf + (size_t)l * fr->f->frame_bytes + c->ret_off[k],
                       callee.pf + (size_t)l * cf->frame_bytes + cf->rets[k].offset, cf->rets[k].size);
        });
        fr->exited |= callee.exited;
        fr->active &= ~callee.exited;
        r = R_DONE;
    }
    free(callee.R);
    free(callee.pf);
    return r;
}

/* Lanes of a warp-synchronous instruction's member mask that have not
 * arrived but still can: the active group waits for them. */
static int must_wait(frame *fr, warp *w, uint32_t members)
{
    if (fr->cur_pc == fr->nopark_pc)
        return 0;
    uint32_t missing = members & w->valid & ~w->exited & ~fr->active;
    return (missing & fr->waiting & ~fr->parked) != 0;
}

static inline uint32_t first_lane_u32(const uint64_t *A, uint32_t m)
{
    return (uint32_t)A[m ? __builtin_ctz(m) : 0];
}

/* ------------------------------------------------------------- arithmetic */

static int g_have_fma = -1;

__attribute__((target("fma"))) static void fma32_lanes_hw(uint64_t *D, const uint64_t *A,
                                                          const uint64_t *B, const uint64_t *C,
                                                          uint32_t m)
{
    FOR_LANES(m, D[l] = bf32(__builtin_fmaf(f32(A[l]), f32(B[l]), f32(C[l]))));
}

static void fma32_lanes(uint64_t *D, const uint64_t *A, const uint64_t *B, const uint64_t *C,
                        uint32_t m)
{
    if (g_have_fma < 0)
        g_have_fma = __builtin_cpu_supports("fma") ? 1 : 0;
    if (g_have_fma) {
        fma32_lanes_hw(D, A, B, C, m);
        return;
    }
    FOR_LANES(m, D[l] = bf32(fmaf(f32(A[l]), f32(B[l]), f32(C[l]))));
}

static inline float post32(float r, unsigned flags)
{
    if (flags & FL_FTZ)
        r = ftz32(r);
    if (flags & FL_SAT)
        r = isnan(r) ? 0.0f : r < 0 ? 0.0f : r > 1 ? 1.0f : r;
    return r;
}

static inline double post64(double r, unsigned flags)
{
    if (flags & FL_SAT)
        r = isnan(r) ? 0.0 : r < 0 ? 0.0 : r > 1 ? 1.0 : r;
    return r;
}

/* One 16-bit float element op through double (exact for add/sub/mul, then
 * one rounding). */
static uint16_t half_op(int op, int et, uint16_t a, uint16_t b, uint16_t c, unsigned flags)
{
    double x = et == T_F16 ? h2d(a) : bf2d(a);
    double y = et == T_F16 ? h2d(b) : bf2d(b);
    double z = et == T_F16 ? h2d(c) : bf2d(c);
    double r;
    switch (op) {
    case OP_ADD: r = x + y; break;
    case OP_SUB: r = x - y; break;
    case OP_MUL: r = x * y; break;
    case OP_FMA: r = fma(x, y, z); break;
    case OP_NEG: return a ^ 0x8000;
    case OP_ABS: return a & 0x7fff;
    case OP_MIN:
        if (isnan(x) || isnan(y))
            return (flags & FL_NAN) ? (et == T_F16 ? 0x7fff : 0x7fff) : isnan(x) ? b : a;
        return x < y || (x == y && (a & 0x8000)) ? a : b;
    case OP_MAX:
        if (isnan(x) || isnan(y))
            return (flags & FL_NAN) ? 0x7fff : isnan(x) ? b : a;
        return x > y || (x == y && !(a & 0x8000)) ? a : b;
    default: r = 0; break;
    }
    if (flags & FL_SAT)
        r = isnan(r) ? 0.0 : r < 0 ? 0.0 : r > 1 ? 1.0 : r;
    return et == T_F16 ? d2h(r) : d2bf(r, RND_RN);
}

static int half_lanes(const pinsn *in, uint64_t *D, const uint64_t *A, const uint64_t *B,
                      const uint64_t *C, uint32_t m)
{
    int t = in->type;
    int et = (t == T_F16 || t == T_F16X2) ? T_F16 : T_BF16;
    int pairs = (t == T_F16X2 || t == T_BF16X2) ? 2 : 1;
    if (in->mode != RND_NONE && in->mode != RND_RN)
        return E_FAIL;
    FOR_LANES(m, {
        uint64_t r = 0;
        for (int k = 0; k < pairs; k++) {
            uint16_t a = (uint16_t)(A[l] >> (16 * k));
            uint16_t bb = B ? (uint16_t)(B[l] >> (16 * k)) : 0;
            uint16_t cc = C ? (uint16_t)(C[l] >> (16 * k)) : 0;
            r |= (uint64_t)half_op(in->op, et, a, bb, cc, in->flags) << (16 * k);
        }
        D[l] = r;
    });
    return 0;
}

static inline int fcmp(int mode, double x, double y)
{
    int un = isnan(x) || isnan(y);
    switch (mode) {
    case CMP_EQ: return !un && x == y;
    case CMP_NE: return !un && x != y;
    case CMP_LT: return !un && x < y;
    case CMP_LE: return !un && x <= y;
    case CMP_GT: return !un && x > y;
    case CMP_GE: return !un && x >= y;
    case CMP_EQU: return un || x == y;
    case CMP_NEU: return un || x != y;
    case CMP_LTU: return un || x < y;
    case CMP_LEU: return un || x <= y;
    case CMP_GTU: return un || x > y;
    case CMP_GEU: return un || x >= y;
    case CMP_NUM: return !un;
    case CMP_NAN: return un;
    default: return 0;
    }
}

static inline int icmp(int mode, int sgn, uint64_t a, uint64_t b, int bits)
{
    int64_t sa = sxt(a, bits), sb = sxt(b, bits);
    uint64_t ua = a & tmask(bits), ub = b & tmask(bits);
    switch (mode) {
    case CMP_EQ: return ua == ub;
    case CMP_NE: return ua != ub;
    case CMP_LT: return sgn ? sa < sb : ua < ub;
    case CMP_LE: return sgn ? sa <= sb : ua <= ub;
    case CMP_GT: return sgn ? sa > sb : ua > ub;
    case CMP_GE: return sgn ? sa >= sb : ua >= ub;
    case CMP_LO: return ua < ub;
    case CMP_LS: return ua <= ub;
    case CMP_HI: return ua > ub;
    case CMP_HS: return ua >= ub;
    default: return 0;
    }
}

static uint64_t brev64(uint64_t v, int bits)
{
    uint64_t r = 0;
    for (int i = 0; i < bits; i++)
        if (v >> i & 1)
            r |= 1ull << (bits - 1 - i);
    return r;
}

static uint64_t bfe(uint64_t a, uint32_t pos, uint32_t len, int bits, int sgn)
{
    pos &= 0xff;
    len &= 0xff;
    int msb = bits - 1;
    int sbit = 0;
    if (sgn && len > 0) {
        uint32_t top = pos + len - 1;
        sbit = (int)(a >> (top > (uint32_t)msb ? (uint32_t)msb : top) & 1);
    }
    uint64_t d = 0;
    for (int i = 0; i <= msb; i++) {
        int bit = ((uint32_t)i < len && pos + (uint32_t)i <= (uint32_t)msb) ? (int)(a >> (pos + (uint32_t)i) & 1) : sbit;
        d |= (uint64_t)bit << i;
    }
    return d;
}

static uint64_t bfi(uint64_t f, uint64_t base, uint32_t pos, uint32_t len, int bits)
{
    pos &= 0xff;
    len &= 0xff;
    uint64_t d = base;
    for (uint32_t i = 0; i < len && pos + i < (uint32_t)bits; i++) {
        d &= ~(1ull << (pos + i));
        d |= (f >> i & 1) << (pos + i);
    }
    return d & tmask(bits);
}

static int exec_int(const pinsn *in, frame *fr, uint64_t *D, const uint64_t *A, const uint64_t *B,
                    const uint64_t *C, const uint64_t *E, uint32_t m)
{
    int t = in->type, bits = ibits(t), sg = is_signed(t);
    uint64_t mask = tmask(bits);
    switch (in->op) {
    case OP_ADD:
        if (in->flags & FL_CC) {
            FOR_LANES(m, {
                uint64_t a = A[l] & mask, s = a + (B[l] & mask);
                fr->cc[l] = bits == 64 ? s < a : (uint8_t)(s >> bits & 1);
                D[l] = s & mask;
            });
        } else if (in->flags & FL_SAT) {
            FOR_LANES(m, {
                int64_t s = sxt(A[l], 32) + sxt(B[l], 32);
                s = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s;
                D[l] = (uint64_t)s & mask;
            });
        } else {
            FOR_LANES(m, D[l] = (A[l] + B[l]) & mask);
        }
        return 0;
    case OP_SUB:
        if (in->flags & FL_CC) {
            FOR_LANES(m, {
                uint64_t a = A[l] & mask, bb = B[l] & mask;
                fr->cc[l] = a < bb;
                D[l] = (a - bb) & mask;
            });
        } else if (in->flags & FL_SAT) {
            FOR_LANES(m, {
                int64_t s = sxt(A[l], 32) - sxt(B[l], 32);
                s = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s;
                D[l] = (uint64_t)s & mask;
            });
        } else {
            FOR_LANES(m, D[l] = (A[l] - B[l]) & mask);
        }
        return 0;
    case OP_ADDC:
        FOR_LANES(m, {
            uint64_t a = A[l] & mask, bb = B[l] & mask, s = a + bb + fr->cc[l];
            if (in->flags & FL_CC)
                fr->cc[l] = bits == 64 ? (s < a || (s == a && fr->cc[l])) : (uint8_t)(s >> bits & 1);
            D[l] = s & mask;
        });
        return 0;
    case OP_SUBC:
        FOR_LANES(m, {
            uint64_t a = A[l] & mask, bb = B[l] & mask, s = a - bb - fr->cc[l];
            if (in->flags & FL_CC)
                fr->cc[l] = a < bb || (a == bb && fr->cc[l]);
            D[l] = s & mask;
        });
        return 0;
    case OP_FNS:
        FOR_LANES(m, {
            uint32_t msk = (uint32_t)A[l], base = (uint32_t)B[l] & 31;
            int32_t off = (int32_t)C[l];
            uint32_t r = 0xffffffffu;
            if (off == 0) {
                if (msk >> base & 1)
                    r = base;
            } else {
                int32_t need = off > 0 ? off : -off, step = off > 0 ? 1 : -1;
                for (int32_t i = (int32_t)base; i >= 0 && i < 32; i += step)
                    if ((msk >> i & 1) && --need == 0) {
                        r = (uint32_t)i;
                        break;
                    }
            }
            D[l] = r;
        });
        return 0;
    case OP_MADC:
    case OP_MUL:
    case OP_MAD: {
        if (in->op == OP_MADC || (in->op == OP_MAD && (in->flags & FL_CC))) {
            if (in->type2 == MULW_WIDE)
                return E_FAIL;
            int cin = in->op == OP_MADC;
            FOR_LANES(m, {
                uint64_t p;
                if (in->type2 == MULW_HI)
                    p = bits == 64 ? (uint64_t)(((unsigned __int128)A[l] * B[l]) >> 64)
                                   : (sg ? (uint64_t)((sxt(A[l], bits) * sxt(B[l], bits)) >> bits)
                                         : ((A[l] & mask) * (B[l] & mask)) >> bits);
                else
                    p = A[l] * B[l];
                p &= mask;
                uint64_t cc = (C[l] & mask);
                unsigned __int128 s = (unsigned __int128)p + cc + (cin ? fr->cc[l] : 0);
                if (in->flags & FL_CC)
                    fr->cc[l] = (uint8_t)((s >> bits) & 1);
                D[l] = (uint64_t)s & mask;
            });
            return 0;
        }
        int mad = in->op == OP_MAD;
        if (in->type2 == MULW_WIDE) {
            uint64_t wm = tmask(bits * 2);
            FOR_LANES(m, {
                uint64_t p = sg ? (uint64_t)(sxt(A[l], bits) * sxt(B[l], bits)) : (A[l] & mask) * (B[l] & mask);
                D[l] = (p + (mad ? C[l] : 0)) & wm;
            });
        } else if (in->type2 == MULW_HI) {
            FOR_LANES(m, {
                uint64_t h;
                if (bits == 64) {
                    if (sg)
                        h = (uint64_t)(((__int128)(int64_t)A[l] * (__int128)(int64_t)B[l]) >> 64);
                    else
                        h = (uint64_t)(((unsigned __int128)A[l] * (unsigned __int128)B[l]) >> 64);
                } else if (sg) {
                    h = (uint64_t)((sxt(A[l], bits) * sxt(B[l], bits)) >> bits);
                } else {
                    h = ((A[l] & mask) * (B[l] & mask)) >> bits;
                }
                D[l] = (h + (mad ? C[l] : 0)) & mask;
            });
        } else if (mad) {
            FOR_LANES(m, D[l] = (A[l] * B[l] + C[l]) & mask);
        } else {
            FOR_LANES(m, D[l] = (A[l] * B[l]) & mask);
        }
        return 0;
    }
    case OP_MUL24:
    case OP_MAD24:
        FOR_LANES(m, {
            int64_t p = sg ? sxt(A[l], 24) * sxt(B[l], 24) : (int64_t)((A[l] & 0xffffff) * (B[l] & 0xffffff));
            uint64_t r = in->type2 == MULW_HI ? (uint64_t)p >> 16 : (uint64_t)p;
            D[l] = (r + (in->op == OP_MAD24 ? C[l] : 0)) & 0xffffffffu;
        });
        return 0;
    case OP_SAD:
        FOR_LANES(m, {
            uint64_t d = sg ? (uint64_t)(sxt(A[l], bits) > sxt(B[l], bits) ? sxt(A[l], bits) - sxt(B[l], bits) : sxt(B[l], bits) - sxt(A[l], bits))
                            : ((A[l] & mask) > (B[l] & mask) ? (A[l] & mask) - (B[l] & mask) : (B[l] & mask) - (A[l] & mask));
            D[l] = (C[l] + d) & mask;
        });
        return 0;
    case OP_DIV:
    case OP_REM: {
        int rem = in->op == OP_REM;
        FOR_LANES(m, {
            uint64_t r;
            if (sg) {
                int64_t a = sxt(A[l], bits), bb = sxt(B[l], bits);
                if (bb == 0)
                    r = rem ? (uint64_t)a : ~0ull; /* what the hardware returns */
                else if (bb == -1)
                    r = rem ? 0 : (uint64_t)0 - (uint64_t)a; /* no overflow trap */
                else
                    r = (uint64_t)(rem ? a % bb : a / bb);
            } else {
                uint64_t a = A[l] & mask, bb = B[l] & mask;
                r = bb == 0 ? (rem ? a : ~0ull) : rem ? a % bb : a / bb;
            }
            D[l] = r & mask;
        });
        return 0;
    }
    case OP_MIN:
    case OP_MAX: {
        int mx = in->op == OP_MAX;
        FOR_LANES(m, {
            int lt = sg ? sxt(A[l], bits) < sxt(B[l], bits) : (A[l] & mask) < (B[l] & mask);
            D[l] = ((lt != mx) ? A[l] : B[l]) & mask;
        });
        return 0;
    }
    case OP_ABS:
        FOR_LANES(m, { int64_t v = sxt(A[l], bits); D[l] = (uint64_t)(v < 0 ? -v : v) & mask; });
        return 0;
    case OP_NEG:
        FOR_LANES(m, D[l] = (0 - A[l]) & mask);
        return 0;
    case OP_AND: FOR_LANES(m, D[l] = A[l] & B[l] & mask); return 0;
    case OP_OR: FOR_LANES(m, D[l] = (A[l] | B[l]) & mask); return 0;
    case OP_XOR: FOR_LANES(m, D[l] = (A[l] ^ B[l]) & mask); return 0;
    case OP_NOT: FOR_LANES(m, D[l] = ~A[l] & mask); return 0;
    case OP_CNOT: FOR_LANES(m, D[l] = (A[l] & mask) == 0); return 0;
    case OP_SHL:
        FOR_LANES(m, { uint32_t s = (uint32_t)B[l]; D[l] = s >= (uint32_t)bits ? 0 : (A[l] << s) & mask; });
        return 0;
    case OP_SHR:
        FOR_LANES(m, {
            uint32_t s = (uint32_t)B[l];
            if (sg)
                D[l] = (uint64_t)(sxt(A[l], bits) >> (s >= (uint32_t)bits ? (uint32_t)bits - 1 : s)) & mask;
            else
                D[l] = s >= (uint32_t)bits ? 0 : (A[l] & mask) >> s;
        });
        return 0;
    case OP_POPC: FOR_LANES(m, D[l] = (uint64_t)__builtin_popcountll(A[l] & mask)); return 0;
    case OP_CLZ:
        FOR_LANES(m, { uint64_t v = A[l] & mask; D[l] = v ? (uint64_t)(__builtin_clzll(v) - (64 - bits)) : (uint64_t)bits; });
        return 0;
    case OP_BREV: FOR_LANES(m, D[l] = brev64(A[l], bits)); return 0;
    case OP_BFIND:
        FOR_LANES(m, {
            uint64_t v = sg && sxt(A[l], bits) < 0 ? ~A[l] & mask : A[l] & mask;
            uint32_t r = v ? (uint32_t)(63 - __builtin_clzll(v)) : 0xffffffffu;
            if (v && (in->flags & FL_SHIFTAMT))
                r = (uint32_t)bits - 1 - r;
            D[l] = r;
        });
        return 0;
    case OP_BFE: FOR_LANES(m, D[l] = bfe(A[l], (uint32_t)B[l], (uint32_t)C[l], bits, sg) & mask); return 0;
    case OP_BFI: FOR_LANES(m, D[l] = bfi(A[l], B[l], (uint32_t)C[l], (uint32_t)E[l], bits)); return 0;
    case OP_PRMT:
        if (in->mode != 0)
            return E_FAIL;
        FOR_LANES(m, {
            uint64_t bytes = (A[l] & 0xffffffffu) | (B[l] & 0xffffffffu) << 32;
            uint32_t sel = (uint32_t)C[l], r = 0;
            for (int k = 0; k < 4; k++) {
                uint32_t s = sel >> (4 * k) & 0xf;
                uint32_t byte = (uint32_t)(bytes >> (8 * (s & 7))) & 0xff;
                if (s & 8)
                    byte = (byte & 0x80) ? 0xff : 0;
                r |= byte << (8 * k);
            }
            D[l] = r;
        });
        return 0;
    case OP_SHF:
        FOR_LANES(m, {
            uint64_t v = (A[l] & 0xffffffffu) | (B[l] & 0xffffffffu) << 32;
            uint32_t n = (uint32_t)C[l];
            n = (in->flags & FL_WRAP) ? n & 31 : (n > 32 ? 32 : n);
            D[l] = (in->flags & FL_RIGHT) ? (v >> n) & 0xffffffffu : (uint32_t)((v << n) >> 32);
        });
        return 0;
    case OP_LOP3: {
        uint32_t lut = (uint32_t)in->imm;
        FOR_LANES(m, {
            uint64_t a = A[l], bb = B[l], c = C[l], r = 0;
            for (int k = 0; k < 8; k++)
                if (lut >> k & 1)
                    r |= ((k & 4) ? a : ~a) & ((k & 2) ? bb : ~bb) & ((k & 1) ? c : ~c);
            D[l] = r & 0xffffffffu;
        });
        return 0;
    }
    default:
        return E_FAIL;
    }
}

static int exec_float(const pinsn *in, uint64_t *D, const uint64_t *A, const uint64_t *B,
                      const uint64_t *C, uint32_t m)
{
    int t = in->type;
    unsigned fl = in->flags;
    int op = in->op;
    if (t == T_F16 || t == T_BF16 || t == T_F16X2 || t == T_BF16X2) {
        if (op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_FMA || op == OP_NEG ||
            op == OP_ABS || op == OP_MIN || op == OP_MAX)
            return half_lanes(in, D, A, B, C, m);
        if (t == T_F16 && (op == OP_EX2 || op == OP_TANH || op == OP_RCP || op == OP_SQRT ||
                           op == OP_RSQRT || op == OP_LG2 || op == OP_SIN || op == OP_COS)) {
            FOR_LANES(m, {
                float x = (float)h2d((uint16_t)A[l]), r;
                switch (op) {
                case OP_EX2: r = exp2f(x); break;
                case OP_TANH: r = tanhf(x); break;
                case OP_RCP: r = 1.0f / x; break;
                case OP_SQRT: r = sqrtf(x); break;
                case OP_RSQRT: r = 1.0f / sqrtf(x); break;
                case OP_LG2: r = log2f(x); break;
                case OP_SIN: r = sinf(x); break;
                default: r = cosf(x); break;
                }
                D[l] = d2h(r);
            });
            return 0;
        }
        return E_FAIL;
    }
    int directed_mode = in->mode == RND_RZ || in->mode == RND_RM || in->mode == RND_RP;
    if (t == T_F32) {
        int ftz = (fl & FL_FTZ) != 0;
        if (directed_mode && (op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_DIV ||
                              op == OP_FMA || op == OP_RCP || op == OP_SQRT)) {
            FOR_LANES(m, {
                uint64_t a = A[l], bb = B ? B[l] : 0, c = C ? C[l] : 0;
                if (ftz) {
                    a = bf32(ftz32(f32(a)));
                    bb = bf32(ftz32(f32(bb)));
                    c = bf32(ftz32(f32(c)));
                }
                D[l] = bf32(post32(f32(directed(op, T_F32, in->mode, a, bb, c)), fl));
            });
            return 0;
        }
#define F1(expr) FOR_LANES(m, { float x = f32(A[l]); if (ftz) x = ftz32(x); D[l] = bf32(post32((expr), fl)); })
#define F2(expr) FOR_LANES(m, { float x = f32(A[l]), y = f32(B[l]); if (ftz) { x = ftz32(x); y = ftz32(y); } D[l] = bf32(post32((expr), fl)); })
        switch (op) {
        case OP_ADD:
            if (!fl) { FOR_LANES(m, D[l] = bf32(f32(A[l]) + f32(B[l]))); return 0; }
            F2(x + y); return 0;
        case OP_SUB:
            if (!fl) { FOR_LANES(m, D[l] = bf32(f32(A[l]) - f32(B[l]))); return 0; }
            F2(x - y); return 0;
        case OP_MUL:
            if (!fl) { FOR_LANES(m, D[l] = bf32(f32(A[l]) * f32(B[l]))); return 0; }
            F2(x * y); return 0;
        case OP_DIV: F2(x / y); return 0;
        case OP_MIN:
            if (fl & FL_NAN) { F2(isnan(x) || isnan(y) ? f32(0x7fffffff) : fminf(x, y)); return 0; }
            F2(fminf(x, y)); return 0;
        case OP_MAX:
            if (fl & FL_NAN) { F2(isnan(x) || isnan(y) ? f32(0x7fffffff) : fmaxf(x, y)); return 0; }
            F2(fmaxf(x, y)); return 0;
        case OP_FMA:
            if (!fl) { fma32_lanes(D, A, B, C, m); return 0; }
            FOR_LANES(m, {
                float x = f32(A[l]), y = f32(B[l]), z = f32(C[l]);
                if (ftz) { x = ftz32(x); y = ftz32(y); z = ftz32(z); }
                D[l] = bf32(post32(fmaf(x, y, z), fl));
            });
            return 0;
        case OP_ABS: F1(fabsf(x)); return 0;
        case OP_NEG: F1(-x); return 0;
        case OP_RCP: F1(1.0f / x); return 0;
        case OP_SQRT: F1(sqrtf(x)); return 0;
        case OP_RSQRT: F1(1.0f / sqrtf(x)); return 0;
        case OP_SIN: F1(sinf(x)); return 0;
        case OP_COS: F1(cosf(x)); return 0;
        case OP_LG2: F1(log2f(x)); return 0;
        case OP_EX2: F1(exp2f(x)); return 0;
        case OP_TANH: F1(tanhf(x)); return 0;
        case OP_COPYSIGN: FOR_LANES(m, D[l] = bf32(copysignf(f32(B[l]), f32(A[l])))); return 0;
        default: return E_FAIL;
        }
#undef F1
#undef F2
    }
    if (t == T_F64) {
        if (directed_mode && (op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_DIV ||
                              op == OP_FMA || op == OP_RCP || op == OP_SQRT)) {
            FOR_LANES(m, D[l] = bf64(post64(f64(directed(op, T_F64, in->mode, A[l], B ? B[l] : 0, C ? C[l] : 0)), fl)));
            return 0;
        }
#define G1(expr) FOR_LANES(m, { double x = f64(A[l]); D[l] = bf64(post64((expr), fl)); })
#define G2(expr) FOR_LANES(m, { double x = f64(A[l]), y = f64(B[l]); D[l] = bf64(post64((expr), fl)); })
        switch (op) {
        case OP_ADD: G2(x + y); return 0;
        case OP_SUB: G2(x - y); return 0;
        case OP_MUL: G2(x * y); return 0;
        case OP_DIV: G2(x / y); return 0;
        case OP_MIN: G2(fmin(x, y)); return 0;
        case OP_MAX: G2(fmax(x, y)); return 0;
        case OP_FMA: FOR_LANES(m, D[l] = bf64(post64(fma(f64(A[l]), f64(B[l]), f64(C[l])), fl))); return 0;
        case OP_ABS: G1(fabs(x)); return 0;
        case OP_NEG: G1(-x); return 0;
        case OP_RCP: G1(1.0 / x); return 0;
        case OP_SQRT: G1(sqrt(x)); return 0;
        case OP_RSQRT: G1(1.0 / sqrt(x)); return 0;
        case OP_COPYSIGN: FOR_LANES(m, D[l] = bf64(copysign(f64(B[l]), f64(A[l])))); return 0;
        default: return E_FAIL;
        }
#undef G1
#undef G2
    }
    return E_FAIL;
}

/* ------------------------------------------------------------- the loop */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* 1 if every lane's access [A+imm, A+imm+n) lies, aligned, inside one
 * cached global range: the per-lane checks can then be skipped. */
static int warp_in_one_range(block_ctx *b, const uint64_t *A, int64_t imm, size_t n, uint32_t m)
{
    uint64_t lo = UINT64_MAX, hi = 0, bits = 0;
    FOR_LANES(m, {
        uint64_t a = A[l] + (uint64_t)imm;
        lo = a < lo ? a : lo;
        hi = a > hi ? a : hi;
        bits |= a;
    });
    if ((n & (n - 1)) == 0 && (bits & (n - 1)))
        return 0;
    if (hi + n < hi)
        return 0;
    for (int i = 0; i < 8; i++)
        if (lo >= b->cache[i].lo && hi + n <= b->cache[i].hi)
            return 1;
    return 0;
}

static int exec_mem(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    lanes_t *R = fr->R;
    const uint64_t *A = R[in->a];
    int t = in->type, es = ptx_type_size(t);
    size_t n = (size_t)es * in->vec;
    if ((in->op == OP_LD || in->op == OP_ST) && in->vec == 1 &&
        (in->space == S_GLOBAL || in->space == S_GENERIC || in->space == S_CONST) &&
        warp_in_one_range(b, A, in->imm, n, m)) {
        int64_t imm = in->imm;
        if (in->op == OP_LD) {
            uint64_t *D = R[in->d];
            if (t == T_F32 || t == T_U32 || t == T_B32)
                FOR_LANES(m, { uint32_t v; memcpy(&v, (const void *)(uintptr_t)(A[l] + (uint64_t)imm), 4); D[l] = v; });
            else
                FOR_LANES(m, D[l] = load_bytes((const uint8_t *)(uintptr_t)(A[l] + (uint64_t)imm), t));
        } else {
            const uint64_t *B = R[in->b];
            if (t == T_F32 || t == T_U32 || t == T_B32 || t == T_S32)
                FOR_LANES(m, { uint32_t v = (uint32_t)B[l]; memcpy((void *)(uintptr_t)(A[l] + (uint64_t)imm), &v, 4); });
            else
                FOR_LANES(m, store_bytes((uint8_t *)(uintptr_t)(A[l] + (uint64_t)imm), t, B[l]));
        }
        return 0;
    }
    switch (in->op) {
    case OP_LD:
        if (in->vec == 1) {
            uint64_t *D = R[in->d];
            FOR_LANES(m, {
                uint8_t *p = mem_at(b, w, fr, in->space, A[l] + (uint64_t)in->imm, n, l, 0);
                if (!p)
                    return E_FAULT;
                D[l] = load_bytes(p, t);
            });
        } else {
            FOR_LANES(m, {
                uint8_t *p = mem_at(b, w, fr, in->space, A[l] + (uint64_t)in->imm, n, l, 0);
                if (!p)
                    return E_FAULT;
                for (int k = 0; k < in->vec; k++)
                    R[in->v[k]][l] = load_bytes(p + k * es, t);
            });
        }
        return 0;
    case OP_ST:
        FOR_LANES(m, {
            uint8_t *p = mem_at(b, w, fr, in->space, A[l] + (uint64_t)in->imm, n, l, 1);
            if (!p)
                return E_FAULT;
            if (in->vec == 1)
                store_bytes(p, t, R[in->b][l]);
            else
                for (int k = 0; k < in->vec; k++)
                    store_bytes(p + k * es, t, R[in->v[k]][l]);
        });
        return 0;
    default: { /* atom, red */
        if (in->space != S_GLOBAL && in->space != S_SHARED && in->space != S_GENERIC)
            return E_FAIL;
        const uint64_t *B = R[in->b], *C = in->c != PTX_NONE ? R[in->c] : NULL;
        FOR_LANES(m, {
            uint8_t *p = mem_at(b, w, fr, in->space, A[l] + (uint64_t)in->imm, n, l, 1);
            if (!p)
                return E_FAULT;
            uint64_t old = atomic_op(p, t, in->mode, B[l], C ? C[l] : 0);
            if (in->op == OP_ATOM)
                R[in->d][l] = is_signed(t) ? old & tmask(es * 8) : old;
        });
        return 0;
    }
    }
}

/* shfl.sync, vote.sync, redux.sync, match.sync for the lanes in m. */
static void exec_warp(warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    lanes_t *R = fr->R;
    uint64_t *D = R[in->d];
    switch (in->op) {
    case OP_SHFL: {
        uint64_t src[PTX_LANES];
        memcpy(src, R[in->a], sizeof src);
        const uint64_t *B = R[in->b], *C = R[in->c];
        uint64_t *P = in->d2 != PTX_NONE ? R[in->d2] : NULL;
        FOR_LANES(m, {
            uint32_t bv = (uint32_t)B[l] & 0x1f, cv = (uint32_t)C[l];
            uint32_t seg = (cv >> 8) & 0x1f;
            uint32_t maxl = ((uint32_t)l & seg) | ((cv & 0x1f) & ~seg);
            uint32_t minl = (uint32_t)l & seg;
            int32_t j;
            int ok;
            switch (in->mode) {
            case SHFL_UP: j = l - (int32_t)bv; ok = j >= (int32_t)maxl; break;
            case SHFL_DOWN: j = l + (int32_t)bv; ok = j <= (int32_t)maxl; break;
            case SHFL_BFLY: j = l ^ (int32_t)bv; ok = j <= (int32_t)maxl; break;
            default: j = (int32_t)(minl | (bv & ~seg)); ok = j <= (int32_t)maxl; break;
            }
            if (!ok)
                j = l;
            D[l] = src[j] & 0xffffffffu;
            if (P)
                P[l] = (uint64_t)ok;
        });
        return;
    }
    case OP_VOTE: {
        const uint64_t *A = R[in->a];
        uint32_t ballot = 0;
        FOR_LANES(m, { if ((A[l] & 1) ^ (in->neg & 1)) ballot |= 1u << l; });
        FOR_LANES(m, {
            switch (in->mode) {
            case VOTE_ALL: D[l] = ballot == m; break;
            case VOTE_ANY: D[l] = ballot != 0; break;
            case VOTE_UNI: D[l] = ballot == 0 || ballot == m; break;
            default: D[l] = ballot; break;
            }
        });
        return;
    }
    case OP_REDUX: {
        const uint64_t *A = R[in->a];
        int sg = is_signed(in->type);
        uint32_t acc = 0;
        int first = 1;
        FOR_LANES(m, {
            uint32_t v = (uint32_t)A[l];
            if (first) {
                acc = v;
                first = 0;
                continue;
            }
            switch (in->mode) {
            case ATOM_ADD: acc += v; break;
            case ATOM_MIN: acc = sg ? ((int32_t)v < (int32_t)acc ? v : acc) : (v < acc ? v : acc); break;
            case ATOM_MAX: acc = sg ? ((int32_t)v > (int32_t)acc ? v : acc) : (v > acc ? v : acc); break;
            case ATOM_AND: acc &= v; break;
            case ATOM_OR: acc |= v; break;
            default: acc ^= v; break;
            }
        });
        FOR_LANES(m, D[l] = acc);
        return;
    }
    case OP_MATCH: {
        const uint64_t *A = R[in->a];
        uint64_t mask = tmask(ibits(in->type));
        uint64_t vals[PTX_LANES];
        memcpy(vals, A, sizeof vals);
        uint64_t *P = in->d2 != PTX_NONE ? R[in->d2] : NULL;
        uint32_t same_all = m;
        FOR_LANES(m, { if ((vals[l] & mask) != (vals[__builtin_ctz(m)] & mask)) same_all = 0; });
        FOR_LANES(m, {
            if (in->mode == 1) {
                uint32_t s = 0;
                for (uint32_t q = m; q; q &= q - 1) {
                    int k = __builtin_ctz(q);
                    if ((vals[k] & mask) == (vals[l] & mask))
                        s |= 1u << k;
                }
                D[l] = s;
            } else {
                D[l] = same_all;
                if (P)
                    P[l] = same_all != 0;
            }
        });
        return;
    }
    default:
        (void)w;
        return;
    }
}

static int run_frame(block_ctx *b, warp *w, frame *fr)
{
    const pfunc *f = fr->f;
    const pinsn *code = f->code;
    lanes_t *R = fr->R;
    for (;;) {
        if (!fr->active) {
            if (!reschedule(fr))
                return fr->blocked ? R_BARRIER : R_DONE;
        }
        if (fr->cur_pc == fr->next_pc)
            merge(fr);
        const pinsn *in = &code[fr->cur_pc];
        uint32_t m = fr->active;
        if (in->guard != PTX_NONE) {
            const uint64_t *G = R[in->guard];
            uint32_t pm = 0;
            FOR_LANES(m, pm |= (uint32_t)(G[l] & 1) << l);
            m = in->guard_neg ? m & ~pm : pm;
        }
        int rc = 0;
        switch (in->op) {
        case OP_BRA: {
            uint32_t taken = m, stay = fr->active & ~m;
            uint32_t target = (uint32_t)in->target;
            if (!stay) {
                fr->cur_pc = target;
            } else if (!taken) {
                fr->cur_pc++;
                continue;
            } else {
                /* Divergence: the fall-through group and the taken group wait;
                 * the lower pc runs first. */
                wait_at(fr, stay, fr->cur_pc + 1);
                wait_at(fr, taken, target);
                fr->active = 0;
                continue;
            }
            if (fr->waiting) {
                recompute_next(fr);
                /* Jumped past a waiting group: let the lowest pc run first. */
                if (fr->wmin_unparked < fr->cur_pc) {
                    wait_at(fr, fr->active, fr->cur_pc);
                    fr->active = 0;
                }
            }
            continue;
        }
        case OP_RET:
        case OP_EXIT:
            if (in->op == OP_EXIT || f->is_entry) {
                w->exited |= m;
                fr->exited |= m;
            }
            fr->done |= m;
            fr->active &= ~m;
            fr->cur_pc++;
            continue;
        case OP_TRAP:
            if (m)
                return E_FAIL;
            fr->cur_pc++;
            continue;
        case OP_BAR:
            if (!m) {
                fr->cur_pc++;
                continue;
            }
            wait_at(fr, 0, 0);
            for (uint32_t q = m; q; q &= q - 1)
                fr->pc[__builtin_ctz(q)] = fr->cur_pc + 1;
            fr->blocked |= m;
            fr->active &= ~m;
            if (fr->active)
                fr->cur_pc++;
            continue;
        case OP_CALL:
            if (m) {
                rc = do_call(b, w, fr, in, m);
                if (rc < 0)
                    return rc;
            }
            fr->cur_pc++;
            continue;
        case OP_SHFL:
        case OP_VOTE:
        case OP_REDUX:
        case OP_MATCH:
        case OP_BARWARP: {
            uint32_t members = first_lane_u32(R[in->e != PTX_NONE ? in->e : in->a], m);
            if (m && must_wait(fr, w, members)) {
                /* Park the group here until the other named lanes arrive. */
                wait_at(fr, fr->active, fr->cur_pc);
                fr->parked |= fr->active;
                fr->active = 0;
                fr->wdirty = 1;
                continue;
            }
            fr->nopark_pc = PTX_NONE;
            if (in->op != OP_BARWARP && m)
                exec_warp(w, fr, in, m);
            fr->cur_pc++;
            continue;
        }
        case OP_ACTIVEMASK:
            FOR_LANES(m, R[in->d][l] = fr->active);
            fr->cur_pc++;
            continue;
        default:
            break;
        }
        if (m) {
            uint64_t *D = in->d != PTX_NONE ? R[in->d] : NULL;
            const uint64_t *A = in->a != PTX_NONE ? R[in->a] : NULL;
            const uint64_t *B = in->b != PTX_NONE ? R[in->b] : NULL;
            const uint64_t *C = in->c != PTX_NONE ? R[in->c] : NULL;
            const uint64_t *E = in->e != PTX_NONE ? R[in->e] : NULL;
            int t = in->type;
            switch (in->op) {
            case OP_MOV: {
                uint64_t mask = tmask(ibits(t));
                FOR_LANES(m, D[l] = A[l] & mask);
                break;
            }
            case OP_PACK: {
                int eb = ibits(t) / in->vec;
                uint64_t em = tmask(eb);
                FOR_LANES(m, {
                    uint64_t v = 0;
                    for (int k = 0; k < in->vec; k++)
                        v |= (R[in->v[k]][l] & em) << (k * eb);
                    D[l] = v;
                });
                break;
            }
            case OP_UNPACK: {
                int eb = ibits(t) / in->vec;
                uint64_t em = tmask(eb);
                uint64_t src[PTX_LANES];
                memcpy(src, A, sizeof src);
                FOR_LANES(m, {
                    for (int k = 0; k < in->vec; k++)
                        R[in->v[k]][l] = (src[l] >> (k * eb)) & em;
                });
                break;
            }
            case OP_CVT:
                if (t == T_F16X2 || t == T_BF16X2) {
                    int et = t == T_F16X2 ? T_F16 : T_BF16;
                    FOR_LANES(m, D[l] = cvt_one(A[l], et, in->type2, in->mode, in->flags) << 16 |
                                        cvt_one(B[l], et, in->type2, in->mode, in->flags));
                } else if (in->type2 == T_U32 && (t == T_U64 || t == T_S64)) {
                    FOR_LANES(m, D[l] = A[l] & 0xffffffffu);
                } else if (in->type2 == T_S32 && (t == T_U64 || t == T_S64)) {
                    FOR_LANES(m, D[l] = (uint64_t)(int64_t)(int32_t)A[l]);
                } else {
                    FOR_LANES(m, D[l] = cvt_one(A[l], t, in->type2, in->mode, in->flags));
                }
                break;
            case OP_CVTA_FROM:
            case OP_CVTA_TO: {
                int to = in->op == OP_CVTA_TO;
                uint64_t mask = tmask(ibits(t));
                FOR_LANES(m, {
                    uint64_t base = 0;
                    switch (in->space) {
                    case S_SHARED: base = (uintptr_t)b->shared; break;
                    case S_LOCAL: base = (uintptr_t)w->local + (size_t)l * b->stack; break;
                    case S_PARAM: base = f->is_entry ? (uintptr_t)b->params : (uintptr_t)(fr->pf + (size_t)l * f->frame_bytes); break;
                    default: break;
                    }
                    D[l] = (to ? A[l] - base : A[l] + base) & mask;
                });
                break;
            }
            case OP_SELP: {
                uint64_t mask = tmask(ibits(t));
                uint64_t neg = (in->neg >> 2) & 1;
                FOR_LANES(m, D[l] = ((C[l] & 1) ^ neg) ? A[l] & mask : B[l] & mask);
                break;
            }
            case OP_SETP: {
                uint64_t *Q = in->d2 != PTX_NONE ? R[in->d2] : NULL;
                uint64_t negc = (in->neg >> 2) & 1;
                int bop = in->type2;
                FOR_LANES(m, {
                    int r;
                    if (t == T_F32) {
                        float x = f32(A[l]), y = f32(B[l]);
                        if (in->flags & FL_FTZ) { x = ftz32(x); y = ftz32(y); }
                        r = fcmp(in->mode, x, y);
                    } else if (t == T_F64) {
                        r = fcmp(in->mode, f64(A[l]), f64(B[l]));
                    } else if (t == T_F16 || t == T_BF16) {
                        r = fcmp(in->mode, to_double(A[l] & 0xffff, t), to_double(B[l] & 0xffff, t));
                    } else {
                        r = icmp(in->mode, is_signed(t), A[l], B[l], ibits(t));
                    }
                    int nr = !r;
                    if (bop != BOOL_NONE) {
                        int c = (int)((C[l] & 1) ^ negc);
                        if (bop == BOOL_AND) { r = r && c; nr = nr && c; }
                        else if (bop == BOOL_OR) { r = r || c; nr = nr || c; }
                        else { r = r ^ c; nr = nr ^ c; }
                    }
                    D[l] = (uint64_t)r;
                    if (Q)
                        Q[l] = (uint64_t)nr;
                });
                break;
            }
            case OP_TESTP:
                FOR_LANES(m, {
                    double x = t == T_F32 ? f32(A[l]) : f64(A[l]);
                    int c = fpclassify(x), r;
                    switch (in->mode) {
                    case TESTP_FINITE: r = isfinite(x); break;
                    case TESTP_INFINITE: r = isinf(x); break;
                    case TESTP_NUMBER: r = !isnan(x); break;
                    case TESTP_NAN: r = isnan(x); break;
                    case TESTP_NORMAL: r = t == T_F32 ? fpclassify(f32(A[l])) == FP_NORMAL : c == FP_NORMAL; break;
                    default: r = t == T_F32 ? fpclassify(f32(A[l])) == FP_SUBNORMAL : c == FP_SUBNORMAL; break;
                    }
                    D[l] = r != 0;
                });
                break;
            case OP_LD:
            case OP_ST:
            case OP_ATOM:
            case OP_RED:
                rc = exec_mem(b, w, fr, in, m);
                break;
            case OP_NOPMEM: {
                /* membar/fence: a locked read-modify-write is a full fence
                 * (and one ThreadSanitizer understands). */
                static int fence_word;
                __atomic_fetch_add(&fence_word, 0, __ATOMIC_SEQ_CST);
                break;
            }
            case OP_CLOCK: {
                uint64_t v = now_ns();
                FOR_LANES(m, D[l] = v);
                break;
            }
            default:
                if (t == T_F32 || t == T_F64 || t == T_F16 || t == T_BF16 || t == T_F16X2 ||
                    t == T_BF16X2 || in->op == OP_FMA || in->op == OP_RCP || in->op == OP_SQRT ||
                    in->op == OP_RSQRT || in->op == OP_SIN || in->op == OP_COS || in->op == OP_LG2 ||
                    in->op == OP_EX2 || in->op == OP_TANH || in->op == OP_COPYSIGN)
                    rc = exec_float(in, D, A, B, C, m);
                else
                    rc = exec_int(in, fr, D, A, B, C, E, m);
                break;
            }
            if (rc < 0)
                return rc;
        }
        fr->cur_pc++;
    }
}

/* ------------------------------------------------------------- launch */

typedef struct slice {
    const ptx_kernel_ctx *kc;
    const ar_launch *L;
    void **params;
    uint64_t begin, end;
    int rc;
} slice;

static int run_blocks(const ptx_kernel_ctx *kc, const ar_launch *L, void **params, uint64_t begin,
                      uint64_t end)
{
    const pmodule *mod = kc->mod;
    const pfunc *f = &mod->funcs[kc->func];
    block_ctx b;
    memset(&b, 0, sizeof b);
    b.mod = mod;
    b.entry = f;
    b.L = L;
    b.nthreads = L->block.x * L->block.y * L->block.z;
    b.nwarps = (b.nthreads + 31) / 32;
    b.dyn_size = L->shared_bytes;
    b.shared_size = f->shared_static + L->shared_bytes;
    b.stack = (mod->max_local + 15u) & ~15u;
    int rc = 0;
    b.params = calloc(1, f->param_bytes ? f->param_bytes : 1);
    b.shared = calloc(1, b.shared_size ? b.shared_size : 1);
    b.warps = calloc(b.nwarps, sizeof *b.warps);
    if (!b.params || !b.shared || !b.warps) {
        rc = E_FAIL;
        goto out;
    }
    for (uint32_t k = 0; k < f->nparams; k++)
        memcpy(b.params + f->params[k].offset, params[k], f->params[k].size);
    for (uint32_t wi = 0; wi < b.nwarps; wi++) {
        warp *w = &b.warps[wi];
        w->id = wi;
        w->top.f = f;
        w->top.R = malloc((size_t)(f->nslots ? f->nslots : 1) * sizeof(lanes_t));
        w->top.pf = calloc(PTX_LANES, f->frame_bytes ? f->frame_bytes : 1);
        w->local = b.stack ? calloc(PTX_LANES, b.stack) : NULL;
        if (!w->top.R || !w->top.pf || (b.stack && !w->local)) {
            rc = E_FAIL;
            goto out;
        }
        memset(w->top.R, 0, (size_t)f->nslots * sizeof(lanes_t));
        fill_consts(&w->top);
        for (int l = 0; l < 32; l++) {
            uint32_t t = wi * 32 + (uint32_t)l;
            w->tid[0][l] = t % L->block.x;
            w->tid[1][l] = (t / L->block.x) % L->block.y;
            w->tid[2][l] = t / (L->block.x * L->block.y);
        }
        uint32_t nvalid = b.nthreads - wi * 32 > 32 ? 32 : b.nthreads - wi * 32;
        w->valid = nvalid == 32 ? FULL : (1u << nvalid) - 1;
    }
    for (uint64_t blk = begin; blk < end && rc == 0; blk++) {
        b.ctaid[0] = (uint32_t)(blk % L->grid.x);
        b.ctaid[1] = (uint32_t)((blk / L->grid.x) % L->grid.y);
        b.ctaid[2] = (uint32_t)(blk / ((uint64_t)L->grid.x * L->grid.y));
        for (uint32_t wi = 0; wi < b.nwarps; wi++) {
            warp *w = &b.warps[wi];
            frame *fr = &w->top;
            w->exited = 0;
            w->finished = 0;
            fr->active = w->valid;
            fr->waiting = fr->parked = fr->blocked = fr->done = fr->exited = 0;
            fr->wdirty = 1;
            fr->cur_pc = 0;
            fr->next_pc = fr->nopark_pc = PTX_NONE;
            fr->local_base = 0;
            fill_specials(&b, w, fr);
        }
        for (;;) {
            int blocked = 0, live = 0;
            for (uint32_t wi = 0; wi < b.nwarps && rc == 0; wi++) {
                warp *w = &b.warps[wi];
                if (w->finished)
                    continue;
                int r = run_frame(&b, w, &w->top);
                if (r < 0)
                    rc = r;
                else if (r == R_BARRIER)
                    blocked = 1, live = 1;
                else
                    w->finished = 1;
            }
            if (rc || !live)
                break;
            (void)blocked;
            /* Every warp is done or at the barrier: release it. */
            for (uint32_t wi = 0; wi < b.nwarps; wi++) {
                frame *fr = &b.warps[wi].top;
                fr->wdirty = 1;
                fr->waiting |= fr->blocked;
                fr->blocked = 0;
                fr->active = 0;
                fr->cur_pc = 0;
            }
        }
    }
out:
    if (b.warps) {
        for (uint32_t wi = 0; wi < b.nwarps; wi++) {
            free(b.warps[wi].top.R);
            free(b.warps[wi].top.pf);
            free(b.warps[wi].local);
        }
    }
    free(b.warps);
    free(b.shared);
    free(b.params);
    return rc;
}

static void *run_slice(void *arg)
{
    slice *s = arg;
    s->rc = run_blocks(s->kc, s->L, s->params, s->begin, s->end);
    return NULL;
}

#define MAX_THREADS 64

int ptx_run(void *kernel_ctx, const ar_launch *launch, void **params)
{
    const ptx_kernel_ctx *kc = kernel_ctx;
    uint64_t n = launch->block_end - launch->block_begin;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t threads = cores < 1 ? 1 : (uint64_t)cores;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads > n)
        threads = n ? n : 1;
    slice sl[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (uint64_t i = 0; i < threads; i++) {
        sl[i].kc = kc;
        sl[i].L = launch;
        sl[i].params = params;
        sl[i].begin = launch->block_begin + n * i / threads;
        sl[i].end = launch->block_begin + n * (i + 1) / threads;
        sl[i].rc = 0;
    }
    for (uint64_t i = 1; i < threads; i++)
        started[i] = pthread_create(&tid[i], NULL, run_slice, &sl[i]) == 0;
    run_slice(&sl[0]);
    int rc = sl[0].rc;
    for (uint64_t i = 1; i < threads; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            run_slice(&sl[i]);
        if (sl[i].rc != 0 && rc != E_FAULT)
            rc = sl[i].rc;
    }
    if (rc == E_FAULT)
        return ARSIM_ERR_ILLEGAL_ADDRESS;
    return rc ? -1 : 0;
}
