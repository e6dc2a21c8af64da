/* PTX floating-point arithmetic, for the interpreter: f32 and f64, and the
 * 16-bit formats (f16, bf16 and their x2 pairs) through double. */
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_exec.h"

static int g_have_fma = -1;

__attribute__((target("fma"))) static void fma32_lanes_hw(uint64_t *D, const uint64_t *A,
                                                          const uint64_t *B, const uint64_t *C,
                                                          uint32_t m)
{
    FOR_LANES(m, D[l] = sim_f32_bits(__builtin_fmaf(sim_f32(A[l]), sim_f32(B[l]), sim_f32(C[l]))));
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
    FOR_LANES(m, D[l] = sim_f32_bits(fmaf(sim_f32(A[l]), sim_f32(B[l]), sim_f32(C[l]))));
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

static uint16_t half_op_raw(int op, int et, uint16_t a, uint16_t b, uint16_t c, unsigned flags);

/* One 16-bit float element op; .relu (fma, min, max) makes a negative
 * result zero and a NaN the canonical NaN. */
static uint16_t half_op(int op, int et, uint16_t a, uint16_t b, uint16_t c, unsigned flags)
{
    uint16_t r = half_op_raw(op, et, a, b, c, flags);
    if (!(flags & FL_RELU))
        return r;
    int nan = et == T_F16 ? (r & 0x7c00) == 0x7c00 && (r & 0x3ff) : (r & 0x7f80) == 0x7f80 && (r & 0x7f);
    return nan ? 0x7fff : (r & 0x8000) ? 0 : r;
}

/* One 16-bit float element op through double (exact for add/sub/mul, then
 * one rounding). */
static uint16_t half_op_raw(int op, int et, uint16_t a, uint16_t b, uint16_t c, unsigned flags)
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
    return et == T_F16 ? d2h(r) : ptx_d2bf(r, RND_RN);
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

int ptx_exec_float(const pinsn *in, uint64_t *D, const uint64_t *A, const uint64_t *B,
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
                    a = sim_f32_bits(ftz32(sim_f32(a)));
                    bb = sim_f32_bits(ftz32(sim_f32(bb)));
                    c = sim_f32_bits(ftz32(sim_f32(c)));
                }
                D[l] = sim_f32_bits(post32(sim_f32(ptx_directed(op, T_F32, in->mode, a, bb, c)), fl));
            });
            return 0;
        }
#define F1(expr) FOR_LANES(m, { float x = sim_f32(A[l]); if (ftz) x = ftz32(x); D[l] = sim_f32_bits(post32((expr), fl)); })
#define F2(expr) FOR_LANES(m, { float x = sim_f32(A[l]), y = sim_f32(B[l]); if (ftz) { x = ftz32(x); y = ftz32(y); } D[l] = sim_f32_bits(post32((expr), fl)); })
        switch (op) {
        case OP_ADD:
            if (!fl) { FOR_LANES(m, D[l] = sim_f32_bits(sim_f32(A[l]) + sim_f32(B[l]))); return 0; }
            F2(x + y); return 0;
        case OP_SUB:
            if (!fl) { FOR_LANES(m, D[l] = sim_f32_bits(sim_f32(A[l]) - sim_f32(B[l]))); return 0; }
            F2(x - y); return 0;
        case OP_MUL:
            if (!fl) { FOR_LANES(m, D[l] = sim_f32_bits(sim_f32(A[l]) * sim_f32(B[l]))); return 0; }
            F2(x * y); return 0;
        case OP_DIV: F2(x / y); return 0;
        case OP_MIN:
            if (fl & FL_NAN) { F2(isnan(x) || isnan(y) ? sim_f32(0x7fffffff) : fminf(x, y)); return 0; }
            F2(fminf(x, y)); return 0;
        case OP_MAX:
            if (fl & FL_NAN) { F2(isnan(x) || isnan(y) ? sim_f32(0x7fffffff) : fmaxf(x, y)); return 0; }
            F2(fmaxf(x, y)); return 0;
        case OP_FMA:
            if (!fl) { fma32_lanes(D, A, B, C, m); return 0; }
            FOR_LANES(m, {
                float x = sim_f32(A[l]), y = sim_f32(B[l]), z = sim_f32(C[l]);
                if (ftz) { x = ftz32(x); y = ftz32(y); z = ftz32(z); }
                D[l] = sim_f32_bits(post32(fmaf(x, y, z), fl));
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
        case OP_COPYSIGN: FOR_LANES(m, D[l] = sim_f32_bits(copysignf(sim_f32(B[l]), sim_f32(A[l])))); return 0;
        default: return E_FAIL;
        }
#undef F1
#undef F2
    }
    if (t == T_F64) {
        if (directed_mode && (op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_DIV ||
                              op == OP_FMA || op == OP_RCP || op == OP_SQRT)) {
            FOR_LANES(m, D[l] = sim_f64_bits(post64(sim_f64(ptx_directed(op, T_F64, in->mode, A[l], B ? B[l] : 0, C ? C[l] : 0)), fl)));
            return 0;
        }
#define G1(expr) FOR_LANES(m, { double x = sim_f64(A[l]); D[l] = sim_f64_bits(post64((expr), fl)); })
#define G2(expr) FOR_LANES(m, { double x = sim_f64(A[l]), y = sim_f64(B[l]); D[l] = sim_f64_bits(post64((expr), fl)); })
        switch (op) {
        case OP_ADD: G2(x + y); return 0;
        case OP_SUB: G2(x - y); return 0;
        case OP_MUL: G2(x * y); return 0;
        case OP_DIV: G2(x / y); return 0;
        case OP_MIN: G2(fmin(x, y)); return 0;
        case OP_MAX: G2(fmax(x, y)); return 0;
        case OP_FMA: FOR_LANES(m, D[l] = sim_f64_bits(post64(fma(sim_f64(A[l]), sim_f64(B[l]), sim_f64(C[l])), fl))); return 0;
        case OP_ABS: G1(fabs(x)); return 0;
        case OP_NEG: G1(-x); return 0;
        case OP_RCP: G1(1.0 / x); return 0;
        case OP_SQRT: G1(sqrt(x)); return 0;
        case OP_RSQRT: G1(1.0 / sqrt(x)); return 0;
        case OP_COPYSIGN: FOR_LANES(m, D[l] = sim_f64_bits(copysign(sim_f64(B[l]), sim_f64(A[l])))); return 0;
        default: return E_FAIL;
        }
#undef G1
#undef G2
    }
    return E_FAIL;
}
