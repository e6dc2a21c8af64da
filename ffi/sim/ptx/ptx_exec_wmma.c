/* PTX's WMMA instructions (what nvcuda::wmma compiles to), for the
 * interpreter: wmma.load.{a,b,c}, wmma.mma and wmma.store.d, shape
 * m16n16k16, f16 or bf16 multiplicands, f16 or f32 accumulators.
 *
 * The PTX ISA leaves a WMMA fragment's layout (which lane holds which
 * element) to the implementation: a kernel may only move fragments between
 * wmma.load, wmma.mma and wmma.store.d, or apply one operation to every
 * element.  cuda-sim's layout, used the same way by all three:
 *   element j (0..7) of lane l is the matrix element e = 8 l + j in row-major
 *   order: row e / 16, column e % 16 (for A that is M x K, B K x N, C and D
 *   M x N), whatever the memory layout (.row or .col) it was loaded from;
 *   registers hold elements low bits first: an f32 accumulator's register j
 *   is element j; f16 accumulators and bf16 multiplicands pack elements 2k
 *   and 2k + 1 in register k; an f16 multiplicand has 8 registers for its 8
 *   elements, registers 4..7 repeating 0..3 (16 elements, as on hardware,
 *   where each element is held twice).
 * Since the memory layout is resolved at the load, the .row/.col of
 * wmma.mma changes nothing here.
 *
 * All three are .sync.aligned: the whole warp, converged (ptx_exec.c), with
 * one address and one stride (in elements; 16 when absent) for all lanes,
 * else the launch fails naming the line.  As load_matrix_sync and
 * store_matrix_sync require, the address is 256-bit aligned and the stride
 * a multiple of 16 bytes; otherwise the access faults (a misaligned address).
 * D's elements are C's plus the 16 products, summed in double and rounded
 * once to D's type, as mma's are (ptx_exec_mma.c).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "ptx_exec.h"

/* Bytes of an element of type t in memory. */
static int esize(int t) { return t == T_F32 ? 4 : 2; }

/* The elements a fragment of type t holds per register. */
static int per_reg(int t) { return t == T_F32 ? 1 : 2; }

static double elem(uint64_t reg, int sub, int t)
{
    if (t == T_F32)
        return (double)sim_f32(reg);
    uint16_t h = (uint16_t)(reg >> 16 * sub);
    return t == T_BF16 ? bf2d(h) : h2d(h);
}

static uint64_t elem_bits(double v, int t)
{
    if (t == T_F32)
        return sim_f32_bits((float)v);
    return t == T_BF16 ? ptx_d2bf(v, RND_RN) : d2h(v);
}

static int uneven(block_ctx *b, const pinsn *in, const char *what)
{
    fprintf(stderr,
            "cuda-sim: kernel %s: ptx line %d: wmma's %s differs between the lanes of the warp "
            "(undefined)\n",
            b->entry->name, in->line, what);
    return E_FAIL;
}

/* The host address of n bytes of a wmma access at addr (its state space),
 * or NULL: out of bounds, or a store to a read-only range. */
static uint8_t *span(block_ctx *b, const pinsn *in, uint64_t addr, size_t n, int wr)
{
    uintptr_t sh = (uintptr_t)b->shared;
    if (in->space == S_GENERIC && addr >= sh && addr - sh < b->shared_size)
        addr -= sh;
    else if (in->space != S_SHARED) {
        uint8_t *p = ptx_global_at(b, addr, n, wr);
        return p && (!wr || !arsim_readonly_hit(b->ro, (uintptr_t)p, n)) ? p : NULL;
    }
    return sim_inside(addr, n, 0, b->shared_size) ? b->shared + addr : NULL;
}

/* The 16 lines (rows for .row, columns for .col) of the matrix at the
 * warp's address, each 16 elements: their host addresses in line[]. */
static int lines(block_ctx *b, frame *fr, const pinsn *in, int t, int wr, uint8_t *line[16])
{
    const uint64_t *A = fr->R[in->a];
    uint64_t stride = in->b != PTX_NONE ? (uint32_t)fr->R[in->b][0] : 16;
    for (int l = 1; l < PTX_LANES; l++)
        if (A[l] != A[0] || (in->b != PTX_NONE && (uint32_t)fr->R[in->b][l] != stride))
            return uneven(b, in, A[l] != A[0] ? "address" : "stride");
    uint64_t p = A[0] + (uint64_t)in->imm, q = p; /* q: p within its window */
    uintptr_t sh = (uintptr_t)b->shared;
    if (in->space == S_GENERIC && p >= sh && p - sh < b->shared_size)
        q = p - sh;
    size_t es = (size_t)esize(t), row = 16 * es;
    if ((q & 31) || (stride * es) % 16)
        return E_FAULT;
    for (int k = 0; k < 16; k++) {
        uint64_t at = p + k * stride * es;
        if (!(line[k] = span(b, in, at, row, wr)))
            return E_FAULT;
        if (line[k] < b->shared || line[k] >= b->shared + b->shared_size)
            continue;
        if ((b->ncp || b->nbl) && ptx_cp_hazard(b, in, (uint64_t)(line[k] - b->shared), row))
            return E_FAIL;
        if (wr)
            ptx_proxy_written(b, (uint64_t)(line[k] - b->shared), row);
    }
    return 0;
}

/* Element (r, c) of a 16 x 16 matrix held in memory lines by .row or .col. */
static uint8_t *at_rc(uint8_t *line[16], int col_major, int r, int c, int es)
{
    return col_major ? line[c] + r * es : line[r] + c * es;
}

static int exec_load(block_ctx *b, frame *fr, const pinsn *in)
{
    uint8_t *line[16];
    int t = in->type, es = esize(t), per = per_reg(t), rc = lines(b, fr, in, t, 0, line);
    if (rc)
        return rc;
    const uint32_t *slot = &fr->f->lists[in->aux];
    for (int l = 0; l < PTX_LANES; l++) {
        uint64_t regs[8] = {0};
        for (int i = 0; i < in->vec * per; i++) {
            int e = 8 * l + i % 8;
            uint8_t *p = at_rc(line, in->mode & 1, e / 16, e % 16, es);
            regs[i / per] |= sim_load_n(p, (uint32_t)es) << (16 * (i % per));
        }
        for (int k = 0; k < in->vec; k++)
            fr->R[slot[k]][l] = regs[k];
    }
    return 0;
}

static int exec_store(block_ctx *b, frame *fr, const pinsn *in)
{
    uint8_t *line[16];
    int t = in->type, es = esize(t), per = per_reg(t), rc = lines(b, fr, in, t, 1, line);
    if (rc)
        return rc;
    const uint32_t *slot = &fr->f->lists[in->aux];
    for (int l = 0; l < PTX_LANES; l++)
        for (int i = 0; i < 8; i++) {
            int e = 8 * l + i;
            uint64_t v = fr->R[slot[i / per]][l] >> (16 * (i % per));
            sim_store_n(at_rc(line, in->mode & 1, e / 16, e % 16, es), (uint32_t)es, v);
        }
    return 0;
}

/* A 16 x 16 matrix from the warp's fragments of it (elements 0..7 of each lane). */
static void gather(const frame *fr, const uint32_t *slot, int t, double m[16][16])
{
    int per = per_reg(t);
    for (int l = 0; l < PTX_LANES; l++)
        for (int j = 0; j < 8; j++)
            m[(8 * l + j) / 16][(8 * l + j) % 16] = elem(fr->R[slot[j / per]][l], j % per, t);
}

static int exec_mma(frame *fr, const pinsn *in)
{
    int at = in->type, dt = in->type2, ct = (int)in->imm;
    int nab = at == T_F16 ? 8 : 4, nd = dt == T_F32 ? 8 : 4;
    const uint32_t *sd = &fr->f->lists[in->aux], *sa = sd + nd, *sb = sa + nab, *sc = sb + nab;
    double a[16][16], bm[16][16], c[16][16];
    gather(fr, sa, at, a);
    gather(fr, sb, at, bm);
    gather(fr, sc, ct, c);
    int per = per_reg(dt);
    for (int l = 0; l < PTX_LANES; l++) {
        uint64_t regs[8] = {0};
        for (int j = 0; j < 8; j++) {
            int r = (8 * l + j) / 16, col = (8 * l + j) % 16;
            double s = c[r][col];
            for (int k = 0; k < 16; k++)
                s += a[r][k] * bm[k][col];
            regs[j / per] |= elem_bits(s, dt) << (16 * (j % per));
        }
        for (int k = 0; k < nd; k++)
            fr->R[sd[k]][l] = regs[k];
    }
    return 0;
}

int ptx_exec_wmma(block_ctx *b, frame *fr, const pinsn *in)
{
    switch (in->op) {
    case OP_WMMA_LOAD: return exec_load(b, fr, in);
    case OP_WMMA_STORE: return exec_store(b, fr, in);
    default: return exec_mma(fr, in);
    }
}
