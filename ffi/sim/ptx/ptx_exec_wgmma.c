/* Hopper's warpgroup MMA (sm_90a), for the interpreter: wgmma.fence,
 * wgmma.mma_async with B in shared memory (a matrix descriptor) and A too or
 * in registers (laid out per warp as mma.m16n8k16's A, the ISA's "WGMMA
 * .m64nNk16 register fragment layout for matrix A"); m64nNk16 on f16/bf16,
 * m64nNk32 on e4m3/e5m2 (A and B by descriptor, K-major: the ISA has no
 * transpose for 8-bit inputs; an 8-bit A in registers is refused at load),
 * wgmma.commit_group, wgmma.wait_group, and fence.proxy.async.
 *
 * Layouts (PTX ISA, "Asynchronous Warpgroup Level Matrix ..."):
 *   - a warpgroup is 4 consecutive warps; warp w (its id % 4) holds rows
 *     16 w .. 16 w + 15 of the 64 x N accumulator D: its register i (f32;
 *     an f16 D packs i = 2 j, 2 j + 1 in register j) is row 16 w + g (+8 for
 *     i % 4 >= 2), column 8 (i / 4) + 2 t + i % 2 (g = lane / 4, t = lane % 4);
 *     so each warp's D needs only its own 16 rows of A, and the warps of a
 *     warpgroup are computed one at a time, as they arrive;
 *   - a matrix descriptor: start address, leading and stride byte offsets
 *     (bits 0-13, 16-29, 32-45, each >> 4), base offset (49-51), swizzle
 *     (62-63: 0 none, 1 128-byte, 2 64-byte, 3 32-byte); the canonical
 *     layouts of the K-major (imm-trans 0) and MN-major (imm-trans 1)
 *     matrices are CUTLASS's (cute/atom/mma_traits_sm90_gmma.hpp), the
 *     swizzle XORs address bits 4.. with bits 7.. of the shared-memory offset.
 *
 * The asynchronous and proxy rules never let a wrong kernel work by accident:
 *   - wgmma.mma_async only records the operation; wait_group N performs, in
 *     order, the warp's operations of every committed group but the N most
 *     recent, reading shared memory and the accumulator registers then.  A
 *     read of D before its wait sees the old registers; shared memory written
 *     before the wait is what the operation reads.
 *   - A shared byte written through the generic proxy (st, atom, cp.async,
 *     wmma.store) is not visible to the async proxy until a fence.proxy.async:
 *     a wgmma.mma_async reading such a byte fails the launch, naming its line.
 *   - A warp's first wgmma.mma_async must follow a wgmma.fence; blocks must be
 *     whole warpgroups; the descriptors and scale-d must agree across lanes.
 * Each element of D is C's (or 0 when scale-d is false) plus the 16 (k16)
 * or 32 (k32) products (negated by imm-scale-a/-b of -1), summed in double
 * and rounded once to D's type, as mma's are; fp8 values are decoded
 * exactly (fp8_to_double), so each product is exact in double.  A nonzero base offset is not modelled: the launch fails.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_exec.h"

#define WG_NEG_A 1
#define WG_NEG_B 2
#define WG_TRANS_A 4
#define WG_TRANS_B 8
#define WG_REGS_A 16
#define WG_FP8 32  /* 8-bit inputs, k32 */
#define WG_A_E5 64 /* A is e5m2 (else e4m3) */
#define WG_B_E5 128

static int fail(block_ctx *b, const pinsn *in, const char *what)
{
    fprintf(stderr, "cuda-sim: kernel %s: ptx line %d: %s\n", b->entry->name, in->line, what);
    return E_FAIL;
}

/* The shared-memory offset of element (mn, k) of a matrix of es-byte
 * elements (2, or 1: always K-major) by its descriptor; mn_major for
 * imm-trans 1.  A row of the canonical layouts is 16 bytes, t elements. */
static uint32_t elem_addr(uint64_t desc, int mn_major, int mn, int k, int es)
{
    uint32_t start = (uint32_t)(desc & 0x3fff) << 4;
    uint32_t lbo = (uint32_t)(desc >> 16 & 0x3fff) << 4, sbo = (uint32_t)(desc >> 32 & 0x3fff) << 4;
    int mode = (int)(desc >> 62), x = mode == 1 ? 8 : mode == 2 ? 4 : mode == 3 ? 2 : 1;
    const int t = 16 / es;
    uint32_t off;
    if (!mn_major && !mode)
        off = (mn % 8) * 16 + (mn / 8) * sbo + (k % t) * es + (k / t) * lbo;
    else if (!mn_major)
        off = (mn % 8) * (x * 16) + (mn / 8) * sbo + k * es;
    else if (!mode)
        off = (mn % t) * es + (mn / t) * sbo + (k % 8) * 16 + (k / 8) * lbo;
    else
        off = (mn % (x * t)) * es + (mn / (x * t)) * lbo + (k % 8) * (x * 16) + (k / 8) * sbo;
    uint32_t a = start + off;
    if (mode) {
        uint32_t bits = mode == 1 ? 3 : mode == 2 ? 2 : 1;
        a ^= (a >> 7 & ((1u << bits) - 1)) << 4;
    }
    return a;
}

/* The operation's operands: A's 16 rows of this warp, B (k x n), of
 * es-byte elements. */
typedef struct wg_view {
    uint64_t da, db;
    int row0, n, ta, tb, k, es;
} wg_view;

static void view_of(const wg_op *op, wg_view *v)
{
    v->da = op->da;
    v->db = op->db;
    v->row0 = 16 * (op->warp % 4);
    v->n = 8 * op->in->mode;
    v->ta = (int)(op->in->imm & WG_TRANS_A) != 0;
    v->tb = (int)(op->in->imm & WG_TRANS_B) != 0;
    v->es = op->in->imm & WG_FP8 ? 1 : 2;
    v->k = 32 / v->es;
}

/* Checks every byte the operation reads: inside shared memory, no pending
 * cp.async, nothing written by the generic proxy since a fence.proxy.async. */
static int check_reads(block_ctx *b, const pinsn *in, const wg_view *v)
{
    int from = in->imm & WG_REGS_A ? 16 : 0; /* A in registers: B only */
    for (int k = 0; k < v->k; k++)
        for (int j = from; j < 16 + v->n; j++) {
            uint32_t a = j < 16 ? elem_addr(v->da, v->ta, v->row0 + j, k, v->es)
                                : elem_addr(v->db, v->tb, j - 16, k, v->es);
            if (!sim_inside(a, (uint64_t)v->es, 0, b->shared_size) || (a & (uint32_t)(v->es - 1)))
                return E_FAULT;
            if ((b->ncp || b->nbl) && ptx_cp_hazard(b, in, a, (uint32_t)v->es))
                return E_FAIL;
            if (b->gdirty && (b->gdirty[a] | b->gdirty[a + (uint32_t)v->es - 1])) {
                fprintf(stderr,
                        "cuda-sim: kernel %s: ptx line %d: wgmma.mma_async reads shared memory "
                        "at offset %u, written through the generic proxy with no "
                        "fence.proxy.async after the write\n",
                        b->entry->name, in->line, a);
                return E_FAIL;
            }
        }
    return 0;
}

/* The element at shared offset a: 16-bit of type t, or fp8 (t T_B8, e5 for
 * e5m2). */
static double elem_at(const block_ctx *b, uint32_t a, int t, int e5)
{
    uint16_t h;
    if (t == T_B8)
        return fp8_to_double(b->shared[a], e5 ? FP8_E5M2 : FP8_E4M3);
    memcpy(&h, b->shared + a, 2);
    return t == T_BF16 ? bf2d(h) : h2d(h);
}

/* D = A B (+ C) for the warp that issued op, into its registers. */
static void perform(block_ctx *b, const wg_op *op)
{
    const pinsn *in = op->in;
    wg_view v;
    view_of(op, &v);
    static __thread double a[16][32], bm[32][256];
    double sa = in->imm & WG_NEG_A ? -1 : 1, sb = in->imm & WG_NEG_B ? -1 : 1;
    const uint32_t *slot = &op->fr->f->lists[in->aux];
    int f32 = in->type2 == T_F32;
    int ea = (in->imm & WG_A_E5) != 0, eb = (in->imm & WG_B_E5) != 0;
    for (int k = 0; k < v.k; k++) {
        for (int r = 0; r < 16 && !(in->imm & WG_REGS_A); r++)
            a[r][k] = sa * elem_at(b, elem_addr(v.da, v.ta, v.row0 + r, k, v.es), in->type, ea);
        for (int c = 0; c < v.n; c++)
            bm[k][c] = sb * elem_at(b, elem_addr(v.db, v.tb, c, k, v.es), in->type, eb);
    }
    if (in->imm & WG_REGS_A) /* the warp's 16 rows of A, laid out as mma.m16n8k16's A */
        for (int l = 0; l < PTX_LANES; l++)
            for (int i = 0; i < 8; i++) {
                uint16_t h = (uint16_t)(op->fr->R[slot[(f32 ? v.n / 2 : v.n / 4) + i / 2]][l] >>
                                        16 * (i & 1));
                int r = (l >> 2) + 8 * ((i >> 1) & 1), c = 2 * (l & 3) + (i & 1) + 8 * (i >= 4);
                a[r][c] = sa * (in->type == T_BF16 ? bf2d(h) : h2d(h));
            }
    for (int l = 0; l < PTX_LANES; l++)
        for (int i = 0; i < v.n / 2; i++) {
            int r = (l >> 2) + 8 * ((i >> 1) & 1), c = 8 * (i >> 2) + 2 * (l & 3) + (i & 1);
            uint64_t *reg = &op->fr->R[slot[f32 ? i : i / 2]][l];
            int sh = f32 ? 0 : 16 * (i & 1);
            double s = 0;
            if (op->scale_d)
                s = f32 ? (double)sim_f32(*reg) : h2d((uint16_t)(*reg >> sh));
            for (int k = 0; k < v.k; k++)
                s += a[r][k] * bm[k][c];
            if (f32)
                *reg = sim_f32_bits((float)s);
            else
                *reg = (*reg & ~(0xffffull << sh)) | (uint64_t)d2h(s) << sh;
        }
}

/* Records warp w's wgmma.mma_async. */
static int issue(block_ctx *b, warp *w, frame *fr, const pinsn *in)
{
    if (b->nwarps % 4)
        return fail(b, in, "wgmma.mma_async in a block that is no whole number of warpgroups");
    if (!w->wg_fenced)
        return fail(b, in, "wgmma.mma_async without a wgmma.fence before the warp's first one");
    const uint64_t *DB = fr->R[in->b];
    const uint64_t *DA = in->imm & WG_REGS_A ? DB : fr->R[in->a]; /* no A descriptor */
    for (int l = 1; l < PTX_LANES; l++)
        if (DA[l] != DA[0] || DB[l] != DB[0] ||
            (in->c != PTX_NONE && (fr->R[in->c][l] & 1) != (fr->R[in->c][0] & 1)))
            return fail(b, in, "wgmma.mma_async's descriptors or scale-d differ between lanes");
    if ((DA[0] | DB[0]) >> 49 & 7)
        return fail(b, in, "wgmma.mma_async: a descriptor's base offset is not modelled");
    wg_op op = {fr, in, DA[0], DB[0], w->wg_groups, (uint16_t)w->id,
                (uint8_t)(in->c == PTX_NONE || (fr->R[in->c][0] & 1))};
    wg_view v;
    view_of(&op, &v);
    int rc = check_reads(b, in, &v);
    if (rc)
        return rc;
    if (b->nwg == b->cap_wg) {
        uint32_t cap = b->cap_wg ? 2 * b->cap_wg : 16;
        wg_op *p = realloc(b->wg, cap * sizeof *p);
        if (!p)
            return E_FAIL;
        b->wg = p;
        b->cap_wg = cap;
    }
    b->wg[b->nwg++] = op;
    return 0;
}

/* Performs warp w's operations but those of its n most recent groups. */
static void complete(block_ctx *b, warp *w, uint64_t n)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < b->nwg; i++) {
        wg_op op = b->wg[i];
        if (op.warp != w->id || op.group + n >= w->wg_groups)
            b->wg[kept++] = op;
        else
            perform(b, &op);
    }
    b->nwg = kept;
}

int ptx_exec_wgmma(block_ctx *b, warp *w, frame *fr, const pinsn *in)
{
    switch (in->op) {
    case OP_WGMMA_FENCE:
        w->wg_fenced = 1;
        return 0;
    case OP_WGMMA_COMMIT:
        w->wg_groups++;
        return 0;
    case OP_WGMMA_WAIT:
        if (b->nwg)
            complete(b, w, (uint64_t)in->imm);
        return 0;
    default:
        return issue(b, w, fr, in);
    }
}
