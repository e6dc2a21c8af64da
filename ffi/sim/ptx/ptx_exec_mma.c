/* PTX warp-level matrix instructions (sm_80 tensor cores), for the
 * interpreter: ldmatrix and mma.sync.aligned (the shapes and types of
 * g_mma_shapes in ptx_mma_forms.h: m16n8k16 and m16n8k8 with f16/bf16,
 * m16n8k8 and m16n8k4 with tf32, m16n8k32 and m16n8k16 with s8/u8,
 * m8n8k4 with f64).
 *
 * Both are .sync.aligned: every lane of the warp runs them together
 * (ptx_exec.c parks the lanes until all 32 have arrived).  Run by fewer
 * lanes (some exited, diverged or predicated off, a partial warp) the
 * hardware's result is undefined, so the launch fails naming the
 * instruction instead.  The fragment layouts are the PTX ISA's ("Matrix
 * Fragments for mma.mMnNkK", "Warp-level matrix load instruction:
 * ldmatrix"); ptx_mma_forms.h spells each one out.
 *
 * Each element of D is the sum of its k products and C's element, the
 * products exact and the sum computed in double, rounded once to D's type:
 * within what the ISA allows a tensor core (whose order and intermediate
 * precision are unspecified).  A .tf32 operand is an f32 register whose
 * low 13 mantissa bits the tensor core ignores; .f64 is a chain of fused
 * multiply-adds in k order; s32 results are exact, then wrapped to 32
 * bits, or clamped with .satfinite.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ptx_exec.h"
#include "ptx_mma_forms.h"

/* The launch fails: a .sync.aligned instruction without its whole warp. */
static int not_aligned(block_ctx *b, const pinsn *in, uint32_t m)
{
    fprintf(stderr,
            "cuda-sim: kernel %s: ptx line %d: %s ran on lanes 0x%08x of a warp; "
            ".sync.aligned needs all 32\n",
            b->entry->name, in->line,
            in->op == OP_MMA        ? "mma"
            : in->op == OP_LDMATRIX ? "ldmatrix"
            : in->op == OP_STMATRIX ? "stmatrix"
            : in->op == OP_WMMA_MMA || in->op == OP_WMMA_LOAD || in->op == OP_WMMA_STORE
                ? "wmma"
                : "wgmma",
            m);
    return E_FAIL;
}

/* The 16 bytes of a matrix row at lane src's address, in shared memory. */
static const uint8_t *row_at(block_ctx *b, const pinsn *in, uint64_t addr)
{
    if (addr & 15)
        return NULL; /* a row is 16 bytes, naturally aligned */
    if (in->space == S_GENERIC) {
        uintptr_t sh = (uintptr_t)b->shared;
        if (addr < sh)
            return NULL;
        addr -= sh; /* a generic address must point into shared memory */
    }
    return sim_inside(addr, 16, 0, b->shared_size) ? b->shared + addr : NULL;
}

static int exec_ldmatrix(block_ctx *b, frame *fr, const pinsn *in)
{
    const uint64_t *A = fr->R[in->a];
    uint16_t mat[4][8][8];
    for (int k = 0; k < in->vec; k++)
        for (int r = 0; r < 8; r++) {
            const uint8_t *p = row_at(b, in, A[8 * k + r] + (uint64_t)in->imm);
            if (!p)
                return E_FAULT;
            if ((b->ncp || b->nbl) && ptx_cp_hazard(b, in, (uint64_t)(p - b->shared), 16))
                return E_FAIL;
            memcpy(mat[k][r], p, 16);
        }
    for (int k = 0; k < in->vec; k++) {
        uint64_t *D = fr->R[in->v[k]];
        for (int l = 0; l < PTX_LANES; l++) {
            int row = l >> 2, col = 2 * (l & 3);
            uint16_t lo = in->mode ? mat[k][col][row] : mat[k][row][col];
            uint16_t hi = in->mode ? mat[k][col + 1][row] : mat[k][row][col + 1];
            D[l] = (uint32_t)lo | (uint32_t)hi << 16;
        }
    }
    return 0;
}

/* stmatrix: ldmatrix's fragments written back, row r of matrix k to the
 * address lane 8k + r holds. */
static int exec_stmatrix(block_ctx *b, frame *fr, const pinsn *in)
{
    const uint64_t *A = fr->R[in->a];
    uint16_t mat[4][8][8];
    for (int k = 0; k < in->vec; k++) {
        const uint64_t *S = fr->R[in->v[k]];
        for (int l = 0; l < PTX_LANES; l++) {
            int row = l >> 2, col = 2 * (l & 3);
            uint16_t lo = (uint16_t)S[l], hi = (uint16_t)(S[l] >> 16);
            *(in->mode ? &mat[k][col][row] : &mat[k][row][col]) = lo;
            *(in->mode ? &mat[k][col + 1][row] : &mat[k][row][col + 1]) = hi;
        }
    }
    for (int k = 0; k < in->vec; k++)
        for (int r = 0; r < 8; r++) {
            uint8_t *p = (uint8_t *)row_at(b, in, A[8 * k + r] + (uint64_t)in->imm);
            if (!p)
                return E_FAULT;
            uint64_t off = (uint64_t)(p - b->shared);
            if ((b->ncp || b->nbl) && ptx_cp_hazard(b, in, off, 16))
                return E_FAIL;
            if (b->nbl && ptx_bulk_write_hazard(b, in, off, 16))
                return E_FAIL;
            memcpy(p, mat[k][r], 16);
            ptx_proxy_written(b, off, 16);
        }
    return 0;
}

/* Element sub (0 the lowest bits) of a fragment register of type t, as a double. */
static double elem(uint64_t reg, int sub, int t)
{
    switch (t) {
    case T_F16: return h2d((uint16_t)(reg >> 16 * sub));
    case T_BF16: return bf2d((uint16_t)(reg >> 16 * sub));
    case T_TF32: return (double)sim_f32(reg & 0xffffe000u); /* tf32: the top 19 bits */
    case T_S8: return (double)(int8_t)(reg >> 8 * sub);
    case T_U8: return (double)(uint8_t)(reg >> 8 * sub);
    case T_S32: return (double)(int32_t)reg;
    case T_F64: return sim_f64(reg);
    default: return (double)sim_f32(reg); /* f32 */
    }
}

/* The bits of one element of type t (f16, f32, s32, f64) holding v. */
static uint64_t elem_bits(double v, int t, int sat)
{
    switch (t) {
    case T_F16: return d2h(v);
    case T_F32: return sim_f32_bits((float)v);
    case T_F64: return sim_f64_bits(v);
    default: /* s32: exact in a double; .satfinite clamps, else it wraps */
        if (sat)
            v = v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v;
        return (uint32_t)(int64_t)v;
    }
}

/* A rows x cols matrix (row stride ld) from the warp's fragments of it. */
static void gather(const frame *fr, const uint32_t *slot, int kind, int rows, int cols, int t,
                   double *mat, int ld)
{
    int bits = mma_elem_bits(t), per = bits == 64 ? 1 : 32 / bits;
    int count = rows * cols / PTX_LANES;
    for (int l = 0; l < PTX_LANES; l++)
        for (int i = 0; i < count; i++) {
            int r, c;
            mma_frag_pos(kind, l, i, &r, &c);
            mat[r * ld + c] = elem(fr->R[slot[i / per]][l], i % per, t);
        }
}

/* The warp's fragments of D (rows x 8). */
static void scatter(frame *fr, const uint32_t *slot, int kind, int rows, int t, int sat,
                    double d[16][8])
{
    int bits = mma_elem_bits(t), per = bits == 64 ? 1 : 32 / bits;
    int count = rows * 8 / PTX_LANES;
    for (int l = 0; l < PTX_LANES; l++) {
        uint64_t regs[4] = {0, 0, 0, 0};
        for (int i = 0; i < count; i++) {
            int r, c;
            mma_frag_pos(kind, l, i, &r, &c);
            regs[i / per] |= elem_bits(d[r][c], t, sat) << (bits == 64 ? 0 : bits * (i % per));
        }
        for (int k = 0; k < count / per; k++)
            fr->R[slot[k]][l] = regs[k];
    }
}

/* D = A B + C for one of g_mma_shapes: the products exact, each sum taken
 * in double and rounded once to D's type (f64: fused multiply-adds in k
 * order; integers: exact, then wrapped or clamped). */
static int exec_mma(frame *fr, const pinsn *in)
{
    const mma_shape *sh = &g_mma_shapes[in->mode];
    int bt = (int)(in->imm & 0xff), ct = (int)(in->imm >> 8 & 0xff);
    double a[16][32], bm[32][8], c[16][8], d[16][8];
    const uint32_t *sd = &fr->f->lists[in->aux];
    const uint32_t *sa = sd + mma_regs(sh->m, sh->n, in->type2);
    const uint32_t *sb = sa + mma_regs(sh->m, sh->k, in->type);
    const uint32_t *sc = sb + mma_regs(sh->k, sh->n, bt);
    gather(fr, sa, sh->a_kind, sh->m, sh->k, in->type, &a[0][0], 32);
    gather(fr, sb, sh->b_kind, sh->k, sh->n, bt, &bm[0][0], 8);
    gather(fr, sc, sh->c_kind, sh->m, sh->n, ct, &c[0][0], 8);
    for (int i = 0; i < sh->m; i++)
        for (int j = 0; j < sh->n; j++) {
            double s = c[i][j];
            for (int k = 0; k < sh->k; k++)
                s = in->type == T_F64 ? fma(a[i][k], bm[k][j], s) : s + a[i][k] * bm[k][j];
            d[i][j] = s;
        }
    scatter(fr, sd, sh->c_kind, sh->m, in->type2, in->flags & FL_SAT, d);
    return 0;
}

int ptx_exec_matrix(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    if (m != FULL)
        return not_aligned(b, in, m);
    if (in->op == OP_WMMA_MMA || in->op == OP_WMMA_LOAD || in->op == OP_WMMA_STORE)
        return ptx_exec_wmma(b, fr, in);
    if (in->op == OP_WGMMA_MMA || in->op == OP_WGMMA_FENCE || in->op == OP_WGMMA_COMMIT ||
        in->op == OP_WGMMA_WAIT)
        return ptx_exec_wgmma(b, w, fr, in);
    if (in->op == OP_STMATRIX)
        return exec_stmatrix(b, fr, in);
    return in->op == OP_MMA ? exec_mma(fr, in) : exec_ldmatrix(b, fr, in);
}
