/* PTX warp-level matrix instructions (sm_80 tensor cores), for the
 * interpreter: ldmatrix and mma.sync.aligned.m16n8k16.
 *
 * Both are .sync.aligned: every lane of the warp runs them together
 * (ptx_exec.c parks the lanes until all 32 have arrived).  Run by fewer
 * lanes (some exited, diverged or predicated off, a partial warp) the
 * hardware's result is undefined, so the launch fails naming the
 * instruction instead.  The fragment layouts are the PTX ISA's ("Matrix
 * Fragments for mma.m16n8k16 with floating point type", "Warp-level
 * matrix load instruction: ldmatrix"): with groupID = lane >> 2 and
 * tig = lane % 4,
 *   A (16x16, row): a0..a7 in 4 registers, low half first; row groupID for
 *     a0 a1 a4 a5, groupID + 8 for a2 a3 a6 a7; column 2 tig + (i & 1),
 *     plus 8 for a4..a7;
 *   B (16x8, col): b0..b3 in 2 registers; row 2 tig + (i & 1), plus 8 for
 *     b2 b3; column groupID;
 *   C, D (16x8): c0..c3; row groupID for c0 c1, groupID + 8 for c2 c3;
 *     column 2 tig + (i & 1).  An f16 accumulator packs c0 c1 and c2 c3.
 * Each element of D is the sum of its 16 products and C's element, the
 * products exact and the sum computed in double, rounded once to the
 * accumulator's type: within what the ISA allows a tensor core (whose
 * order and intermediate precision are unspecified).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "ptx_exec.h"

/* The launch fails: a .sync.aligned instruction without its whole warp. */
static int not_aligned(block_ctx *b, const pinsn *in, uint32_t m)
{
    fprintf(stderr,
            "cuda-sim: kernel %s: ptx line %d: %s ran on lanes 0x%08x of a warp; "
            ".sync.aligned needs all 32\n",
            b->entry->name, in->line, in->op == OP_MMA ? "mma" : "ldmatrix", m);
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
            if (b->ncp && ptx_cp_hazard(b, in, (uint64_t)(p - b->shared), 16))
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

/* Half i (0 low, 1 high) of a register's value, as a double. */
static double half_of(uint64_t reg, int i, int type)
{
    uint16_t h = (uint16_t)(reg >> (16 * i));
    return type == T_BF16 ? bf2d(h) : h2d(h);
}

/* The warp's A (16x16), B (16x8) and C (16x8) from their fragments. */
static void gather(const frame *fr, const uint32_t *slot, int in_t, int acc_t, double a[16][16],
                   double bm[16][8], double c[16][8])
{
    const uint32_t *sa = slot + (acc_t == T_F32 ? 4 : 2), *sb = sa + 4, *sc = sb + 2;
    for (int l = 0; l < PTX_LANES; l++) {
        int g = l >> 2, t2 = 2 * (l & 3);
        for (int i = 0; i < 8; i++) {
            uint64_t reg = fr->R[sa[i >> 1]][l];
            a[g + ((i >> 1) & 1) * 8][t2 + (i & 1) + (i >= 4) * 8] = half_of(reg, i & 1, in_t);
        }
        for (int i = 0; i < 4; i++)
            bm[t2 + (i & 1) + (i >= 2) * 8][g] = half_of(fr->R[sb[i >> 1]][l], i & 1, in_t);
        for (int i = 0; i < 4; i++) {
            int row = g + (i >= 2) * 8, col = t2 + (i & 1);
            if (acc_t == T_F32)
                c[row][col] = (double)sim_f32(fr->R[sc[i]][l]);
            else
                c[row][col] = half_of(fr->R[sc[i >> 1]][l], i & 1, T_F16);
        }
    }
}

/* D's fragments from D (16x8). */
static void scatter(frame *fr, const uint32_t *slot, int acc_t, double d[16][8])
{
    for (int l = 0; l < PTX_LANES; l++) {
        int g = l >> 2, t2 = 2 * (l & 3);
        if (acc_t == T_F32) {
            for (int i = 0; i < 4; i++)
                fr->R[slot[i]][l] = sim_f32_bits((float)d[g + (i >= 2) * 8][t2 + (i & 1)]);
            continue;
        }
        for (int r = 0; r < 2; r++)
            fr->R[slot[r]][l] = (uint32_t)d2h(d[g + r * 8][t2]) |
                                (uint32_t)d2h(d[g + r * 8][t2 + 1]) << 16;
    }
}

static int exec_mma(frame *fr, const pinsn *in)
{
    double a[16][16], bm[16][8], c[16][8], d[16][8];
    const uint32_t *slot = &fr->f->lists[in->aux];
    gather(fr, slot, in->type, in->type2, a, bm, c);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 8; j++) {
            double s = c[i][j];
            for (int k = 0; k < 16; k++)
                s += a[i][k] * bm[k][j];
            d[i][j] = s;
        }
    scatter(fr, slot, in->type2, d);
    return 0;
}

int ptx_exec_matrix(block_ctx *b, frame *fr, const pinsn *in, uint32_t m)
{
    if (m != FULL)
        return not_aligned(b, in, m);
    return in->op == OP_MMA ? exec_mma(fr, in) : exec_ldmatrix(b, fr, in);
}
