/* PTX bulk asynchronous copies (sm_90), for the interpreter:
 * cp.async.bulk and cp.async.bulk.tensor (tile mode, 1D-5D) in both
 * directions, im2col-mode tensor loads (3D-5D), cp.async.bulk.prefetch[.tensor]
 * (checked no-ops), cp.async.bulk.commit_group and wait_group[.read], and the
 * tensor-map instructions tensormap.replace and tensormap.cp_fenceproxy.
 *
 * A load (global to shared memory) reads global memory when it is issued
 * and lands in shared memory only when a thread waits on its mbarrier's
 * phase (ptx_bulk_flush, from ptx_exec_mbar.c), which then completes the
 * copy's bytes as transactions.  Until then its destination is pending:
 * an access to it fails the launch naming both lines (ptx_cp_hazard).
 *
 * A store (shared to global memory) joins the issuing thread's current bulk
 * group.  Its source must have no generic-proxy write since the last
 * fence.proxy.async (else the launch fails, as wgmma's operands do); a
 * write to its source before a wait_group.read has covered it fails the
 * launch.  wait_group.read reads the source; wait_group (without .read)
 * writes global memory, so a kernel that reads the destination without it
 * reads the old bytes.  A block's stores still pending when it ends are
 * completed then.
 *
 * Tensor copies follow the map (sim_tensormap.h): the box's elements, packed
 * innermost first, each at coordinate c[i] + j * elementStride[i]; the ones
 * outside the tensor read as zeros (or NaN with the NaN fill, float types)
 * and are not stored; with a swizzle, shared-memory address bits 4.. are
 * XORed with bits 7.. (the layout wgmma's descriptors read).
 *
 * An im2col load (PTX ISA, "im2col mode") fills pixelsPerColumn rows of
 * channelsPerPixel elements.  The instruction's W, H, D coordinates are the
 * filter base, which must lie in the map's bounding box (lower corner to
 * dimension - 1 + upper corner); each row is the pixel at base + the im2col
 * offsets, in image N, channels from coordinate 0.  The base then steps by
 * the traversal stride in W, wrapping to the box's lower corner and stepping
 * H, then D, then N (by one): past the last image, or outside the tensor,
 * elements read as the fill.  A traversal stride other than 1 in N, which
 * the ISA does not describe, fails the launch.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_exec.h"

static int fail(block_ctx *b, const pinsn *in, const char *what)
{
    fprintf(stderr, "cuda-sim: kernel %s: ptx line %d: %s\n", b->entry->name, in->line, what);
    return E_FAIL;
}

static bulk_op *push(block_ctx *b)
{
    if (b->nbl == b->cap_bl) {
        uint32_t cap = b->cap_bl ? 2 * b->cap_bl : 16;
        bulk_op *p = realloc(b->bl, cap * sizeof *p);
        if (!p)
            return NULL;
        b->bl = p;
        b->cap_bl = cap;
    }
    bulk_op *op = &b->bl[b->nbl++];
    memset(op, 0, sizeof *op);
    return op;
}

static void drop(block_ctx *b, uint32_t i)
{
    free(b->bl[i].data);
    b->bl[i] = b->bl[--b->nbl];
}

/* The shared offset of an address in space sp (shared, or generic), or -1. */
static int64_t shared_off(block_ctx *b, uint64_t a, int sp, size_t n)
{
    uintptr_t sh = (uintptr_t)b->shared;
    if (sp == S_GENERIC) {
        if (a < sh)
            return -1;
        a -= sh;
    }
    return sim_inside(a, n, 0, b->shared_size) ? (int64_t)a : -1;
}

static uint64_t swz(uint64_t a, unsigned swizzle)
{
    return swizzle ? a ^ (a >> 7 & ((1u << swizzle) - 1)) << 4 : a;
}

/* ------------------------------------------------------------- tensor boxes */

typedef struct box_walk {
    const sim_tensormap *m;
    unsigned rank, es, n[5];
    size_t bytes;
} box_walk;

static const char *box_of(box_walk *w, const sim_tensormap *m)
{
    const char *why = sim_tensormap_invalid(m);
    if (why)
        return why;
    w->m = m;
    w->rank = m->rank_m1 + 1u;
    w->es = sim_tensormap_esize(m->elemtype);
    w->bytes = w->es;
    for (unsigned i = 0; i < 5; i++) {
        w->n[i] = i < w->rank ? (m->box[i] + m->estride[i] - 1u) / m->estride[i] : 1;
        w->bytes *= w->n[i];
    }
    return NULL;
}

static void oob_fill(uint8_t *p, const sim_tensormap *m, unsigned es)
{
    static const uint64_t nan[] = {[6] = 0x7fff, [7] = 0x7fffffff, [8] = 0x7fffffff,
                                   [9] = 0x7ff8000000000000ull, [10] = 0x7fff,
                                   [11] = 0x7fffffff, [12] = 0x7fffffff};
    uint64_t v = m->fill && m->elemtype >= 6 ? nan[m->elemtype] : 0;
    memcpy(p, &v, es);
}

/* Moves the box at coordinates c between global memory and buf (the box's
 * shared bytes, based at shared offset soff): a load fills every element,
 * a store writes the ones inside the tensor.  0, or E_FAULT. */
static int move_box(block_ctx *b, const box_walk *w, const int32_t *c, uint8_t *buf,
                    uint64_t soff, int store)
{
    const sim_tensormap *m = w->m;
    size_t o = 0;
    for (unsigned j4 = 0; j4 < w->n[4]; j4++)
        for (unsigned j3 = 0; j3 < w->n[3]; j3++)
            for (unsigned j2 = 0; j2 < w->n[2]; j2++)
                for (unsigned j1 = 0; j1 < w->n[1]; j1++) {
                    unsigned j[5] = {0, j1, j2, j3, j4};
                    int inside = 1;
                    uint64_t row = m->addr;
                    for (unsigned i = 1; i < w->rank; i++) {
                        int64_t g = (int64_t)c[i] + (int64_t)j[i] * m->estride[i];
                        inside &= g >= 0 && (uint64_t)g < m->dim[i];
                        row += (uint64_t)g * m->stride[i - 1];
                    }
                    for (unsigned j0 = 0; j0 < w->n[0]; j0++, o += w->es) {
                        uint8_t *s = buf + (swz(soff + o, m->swizzle) - soff);
                        int64_t g = (int64_t)c[0] + (int64_t)j0 * m->estride[0];
                        if (!inside || g < 0 || (uint64_t)g >= m->dim[0]) {
                            if (!store)
                                oob_fill(s, m, w->es);
                            continue;
                        }
                        uint8_t *p = ptx_global_at(b, row + (uint64_t)g * w->es, w->es, store);
                        if (!p)
                            return E_FAULT;
                        memcpy(store ? p : s, store ? s : p, w->es);
                    }
                }
    return 0;
}

/* ------------------------------------------------------------- im2col */

/* The next filter base after pos (W, H, D then N in pos[ns]), in the box. */
static void im2col_step(const sim_tensormap *m, unsigned ns, const int64_t *lo,
                        const int64_t *hi, int64_t *pos)
{
    for (unsigned i = 0; i < ns; i++) {
        pos[i] += m->estride[i + 1];
        if (pos[i] <= hi[i])
            return;
        pos[i] = lo[i];
    }
    pos[ns]++;
}

/* The bounding box of an im2col map in lo and hi (W, H, D; inclusive);
 * fails the launch unless the filter base c (channel, W, .., N) lies in it
 * and the map has no traversal stride in N. */
static int im2col_box(block_ctx *b, const pinsn *in, const sim_tensormap *m, const int32_t *c,
                      int64_t *lo, int64_t *hi)
{
    unsigned rank = m->rank_m1 + 1u;
    for (unsigned i = 0; i + 2 < rank; i++) {
        lo[i] = m->lower[i];
        hi[i] = (int64_t)m->dim[i + 1] - 1 + m->upper[i];
        if (c[i + 1] < lo[i] || c[i + 1] > hi[i])
            return fail(b, in, "cp.async.bulk.tensor .im2col: the filter base lies outside the "
                               "map's bounding box");
    }
    if (m->estride[rank - 1] != 1)
        return fail(b, in, "cp.async.bulk.tensor .im2col: a traversal stride in N is not modelled");
    return 0;
}

/* Lane l's im2col box: the base c (channel, W[, H[, D]], N), the offsets
 * off; into buf (based at shared offset soff).  0, E_FAULT or E_FAIL. */
static int im2col_load(block_ctx *b, const pinsn *in, const sim_tensormap *m, const int32_t *c,
                       const uint32_t *off, uint8_t *buf, uint64_t soff)
{
    unsigned rank = m->rank_m1 + 1u, ns = rank - 2, es = sim_tensormap_esize(m->elemtype);
    int64_t lo[3], hi[3], pos[4];
    if (im2col_box(b, in, m, c, lo, hi))
        return E_FAIL;
    for (unsigned i = 0; i <= ns; i++)
        pos[i] = c[i + 1];
    size_t o = 0;
    for (unsigned p = 0; p < m->ppc; p++, im2col_step(m, ns, lo, hi, pos)) {
        int inside = pos[ns] >= 0 && (uint64_t)pos[ns] < m->dim[rank - 1];
        uint64_t row = m->addr + (uint64_t)pos[ns] * m->stride[rank - 2];
        for (unsigned i = 0; i < ns; i++) {
            int64_t g = pos[i] + off[i];
            inside &= g >= 0 && (uint64_t)g < m->dim[i + 1];
            row += (uint64_t)g * m->stride[i];
        }
        for (unsigned k = 0; k < m->cpp; k++, o += es) {
            uint8_t *s = buf + (swz(soff + o, m->swizzle) - soff);
            int64_t ch = (int64_t)c[0] + k;
            if (!inside || ch < 0 || (uint64_t)ch >= m->dim[0]) {
                oob_fill(s, m, es);
                continue;
            }
            const uint8_t *g = ptx_global_at(b, row + (uint64_t)ch * es, es, 0);
            if (!g)
                return E_FAULT;
            memcpy(s, g, es);
        }
    }
    return 0;
}

/* Lane l's im2col offsets (W, H, D), checked against the rank's range. */
static int im2col_offsets(block_ctx *b, frame *fr, const pinsn *in, int l, unsigned rank,
                          uint32_t *off)
{
    const uint32_t slot[3] = {in->c, in->d, in->f};
    uint32_t max = rank == 3 ? 0xffffu : rank == 4 ? 0xffu : 0x1fu;
    for (unsigned i = 0; i + 2 < rank; i++) {
        off[i] = (uint32_t)fr->R[slot[i]][l] & 0xffffu;
        if (off[i] > max)
            return fail(b, in, "cp.async.bulk.tensor .im2col: an offset out of range for the rank");
    }
    return 0;
}

/* The map at lane l's tensor-map operand, read from whichever window holds it. */
static int read_map(block_ctx *b, warp *w, frame *fr, const pinsn *in, int l, sim_tensormap *m)
{
    size_t avail = 0;
    uint64_t a = fr->R[in->b][l] + (uint64_t)(int64_t)in->aux;
    const uint8_t *p = ptx_mem_span(b, w, fr, a, l, &avail);
    if (!p || avail < sizeof *m || a % 64)
        return fail(b, in, "the tensor-map operand is not a 64-byte aligned CUtensorMap");
    memcpy(m, p, sizeof *m);
    return 0;
}

/* ------------------------------------------------------------- issue */

static int check_dst(block_ctx *b, const pinsn *in, uint64_t off, size_t n)
{
    if ((b->ncp || b->nbl) && ptx_cp_hazard(b, in, off, n))
        return E_FAIL;
    if (!b->cp_busy && !(b->cp_busy = calloc(b->shared_size, sizeof *b->cp_busy)))
        return E_FAIL;
    return 0;
}

static int proxy_clean(block_ctx *b, const pinsn *in, uint64_t off, size_t n)
{
    for (size_t k = 0; b->gdirty && k < n; k++)
        if (b->gdirty[off + k]) {
            fprintf(stderr,
                    "cuda-sim: kernel %s: ptx line %d: cp.async.bulk reads shared memory at "
                    "offset %llu, written through the generic proxy with no fence.proxy.async "
                    "after the write\n",
                    b->entry->name, in->line, (unsigned long long)(off + k));
            return E_FAIL;
        }
    return 0;
}

/* Lane l's load: n bytes for shared offset dst (data, taken), completing mbar. */
static int issue_load(block_ctx *b, warp *w, frame *fr, const pinsn *in, int l, uint64_t dst,
                      uint8_t *data, size_t n)
{
    int64_t mb = shared_off(b, fr->R[in->e][l] + (uint64_t)(int64_t)in->target, in->space, 8);
    bulk_op *op = mb < 0 || mb % 8 || check_dst(b, in, dst, n) ? NULL : push(b);
    if (!op) {
        free(data);
        return mb < 0 || mb % 8 ? fail(b, in, "the mbarrier operand is not in shared memory")
                                : E_FAIL;
    }
    *op = (bulk_op){.data = data, .soff = (uint32_t)dst, .size = (uint32_t)n,
                    .mbar = (uint32_t)mb, .line = in->line, .warp = (uint16_t)w->id,
                    .lane = (uint8_t)l};
    for (size_t k = 0; k < n; k++)
        b->cp_busy[dst + k]++;
    return 0;
}

static int issue_store(block_ctx *b, warp *w, const pinsn *in, int l, uint64_t src, size_t n,
                       bulk_op *tmpl)
{
    if (proxy_clean(b, in, src, n))
        return E_FAIL;
    bulk_op *op = push(b);
    if (!op)
        return E_FAIL;
    *op = *tmpl;
    op->soff = (uint32_t)src;
    op->size = (uint32_t)n;
    op->store = 1;
    op->group = w->bulk_groups[l];
    op->line = in->line;
    op->warp = (uint16_t)w->id;
    op->lane = (uint8_t)l;
    return 0;
}

static int bulk_plain(block_ctx *b, warp *w, frame *fr, const pinsn *in, int l)
{
    uint64_t dst = fr->R[in->a][l] + (uint64_t)in->imm;
    uint64_t src = fr->R[in->b][l] + (uint64_t)(int64_t)in->aux;
    uint32_t n = (uint32_t)fr->R[in->c][l];
    if (!n || n % 16 || (dst | src) % 16)
        return fail(b, in, "cp.async.bulk needs a size and addresses that are multiples of 16");
    int64_t sh = shared_off(b, in->mode ? src : dst, in->space, n);
    if (sh < 0)
        return E_FAULT;
    if (in->mode) {
        bulk_op t = {.gaddr = dst};
        return ptx_global_at(b, dst, n, 1) ? issue_store(b, w, in, l, (uint64_t)sh, n, &t)
                                           : E_FAULT;
    }
    const uint8_t *p = ptx_global_at(b, src, n, 0);
    uint8_t *data = p ? malloc(n) : NULL;
    if (!data)
        return p ? E_FAIL : E_FAULT;
    memcpy(data, p, n);
    return issue_load(b, w, fr, in, l, (uint64_t)sh, data, n);
}

/* Lane l's map, checked for the instruction's mode and rank; its box's
 * bytes in *bytes (and its walk in bw, tile mode). */
static int tensor_map_of(block_ctx *b, warp *w, frame *fr, const pinsn *in, int l,
                         sim_tensormap *m, box_walk *bw, size_t *bytes)
{
    if (read_map(b, w, fr, in, l, m))
        return E_FAIL;
    int i2c = in->op == OP_BULK_PREFETCH ? in->mode == 2 : (in->flags & FL_IM2COL) != 0;
    const char *why = i2c ? sim_tensormap_im2col_invalid(m) : box_of(bw, m);
    if (!why && m->rank_m1 + 1u != in->vec)
        why = "the map's rank differs";
    if (why) {
        fprintf(stderr, "cuda-sim: kernel %s: ptx line %d: cp.async.bulk.tensor.%ud: %s\n",
                b->entry->name, in->line, in->vec, why);
        return E_FAIL;
    }
    *bytes = i2c ? (size_t)m->ppc * m->cpp * sim_tensormap_esize(m->elemtype) : bw->bytes;
    return 0;
}

static int bulk_tensor(block_ctx *b, warp *w, frame *fr, const pinsn *in, int l)
{
    sim_tensormap m;
    box_walk bw;
    size_t bytes;
    uint32_t off[3];
    if (tensor_map_of(b, w, fr, in, l, &m, &bw, &bytes) ||
        ((in->flags & FL_IM2COL) && im2col_offsets(b, fr, in, l, in->vec, off)))
        return E_FAIL;
    bulk_op t = {.map = m, .tensor = 1};
    for (unsigned i = 0; i < in->vec; i++)
        t.coord[i] = (int32_t)fr->R[i < 4 ? in->v[i] : in->d2][l];
    int64_t sh = shared_off(b, fr->R[in->a][l] + (uint64_t)in->imm, in->space, bytes);
    if (sh < 0 || sh % 128)
        return fail(b, in, "the box's shared memory is not 128-byte aligned inside the block's");
    if (m.swizzle && bytes % 128)
        return fail(b, in, "a swizzled box must be a multiple of 128 bytes");
    if (in->mode)
        return issue_store(b, w, in, l, (uint64_t)sh, bytes, &t);
    uint8_t *data = calloc(1, bytes);
    if (!data)
        return E_FAIL;
    int rc = in->flags & FL_IM2COL ? im2col_load(b, in, &m, t.coord, off, data, (uint64_t)sh)
                                   : move_box(b, &bw, t.coord, data, (uint64_t)sh, 0);
    if (rc) {
        free(data);
        return rc;
    }
    return issue_load(b, w, fr, in, l, (uint64_t)sh, data, bytes);
}

/* cp.async.bulk.prefetch[.tensor]: a hint with no visible effect, checked
 * as the copy it names would be (the contiguous form: a 16-byte aligned
 * global range, a size a multiple of 16; the tensor form: its map). */
static int bulk_prefetch(block_ctx *b, warp *w, frame *fr, const pinsn *in, int l)
{
    if (in->mode) {
        sim_tensormap m;
        box_walk bw;
        size_t bytes;
        uint32_t off[3];
        int64_t lo[3], hi[3];
        int32_t c[5];
        if (tensor_map_of(b, w, fr, in, l, &m, &bw, &bytes))
            return E_FAIL;
        for (unsigned i = 0; i < in->vec; i++)
            c[i] = (int32_t)fr->R[i < 4 ? in->v[i] : in->d2][l];
        return in->mode == 2 && (im2col_offsets(b, fr, in, l, in->vec, off) ||
                                 im2col_box(b, in, &m, c, lo, hi))
                   ? E_FAIL
                   : 0;
    }
    uint64_t a = fr->R[in->a][l] + (uint64_t)in->imm;
    uint32_t n = (uint32_t)fr->R[in->c][l];
    if (!n || n % 16 || a % 16)
        return fail(b, in, "cp.async.bulk.prefetch needs a size and an address that are "
                           "multiples of 16");
    return ptx_global_at(b, a, n, 0) ? 0 : E_FAULT;
}

/* ------------------------------------------------------------- completion */



/* A store reads its source (once). */
static int store_read(block_ctx *b, bulk_op *op)
{
    if (op->read)
        return 0;
    if (!(op->data = malloc(op->size)))
        return E_FAIL;
    memcpy(op->data, b->shared + op->soff, op->size);
    op->read = 1;
    return 0;
}

static int store_write(block_ctx *b, bulk_op *op)
{
    if (store_read(b, op))
        return E_FAIL;
    if (!op->tensor) {
        uint8_t *p = ptx_global_at(b, op->gaddr, op->size, 1);
        if (!p)
            return E_FAULT;
        memcpy(p, op->data, op->size);
        return 0;
    }
    box_walk bw;
    box_of(&bw, &op->map);
    /* the bytes as they sat in shared memory, based at soff */
    return move_box(b, &bw, op->coord, op->data, op->soff, 1);
}

static int bulk_wait(block_ctx *b, warp *w, const pinsn *in, uint32_t m)
{
    for (uint32_t i = 0; i < b->nbl;) {
        bulk_op *op = &b->bl[i];
        if (!op->store || op->warp != w->id || !(m >> op->lane & 1) ||
            op->group + (uint64_t)in->imm >= w->bulk_groups[op->lane]) {
            i++;
            continue;
        }
        int rc = in->mode ? store_read(b, op) : store_write(b, op);
        if (rc)
            return rc;
        if (in->mode)
            i++;
        else
            drop(b, i);
    }
    return 0;
}

int ptx_bulk_end(block_ctx *b, int complete)
{
    int rc = complete ? 0 : 1;
    while (b->nbl) {
        bulk_op *op = &b->bl[b->nbl - 1];
        if (op->store && !rc)
            rc = store_write(b, op);
        else if (!op->store)
            for (uint32_t k = 0; k < op->size; k++)
                b->cp_busy[op->soff + k]--;
        drop(b, b->nbl - 1);
    }
    return complete ? rc : 0;
}



/* ------------------------------------------------------------- tensor maps */

static int tmap_replace(block_ctx *b, frame *fr, const pinsn *in, int l)
{
    uint64_t a = fr->R[in->a][l] + (uint64_t)in->imm, v = fr->R[in->c][l];
    uint8_t *p = NULL;
    int64_t sh = in->space == S_SHARED ? shared_off(b, a, S_SHARED, 128) : -1;
    p = sh >= 0 ? b->shared + sh : in->space == S_SHARED ? NULL : ptx_global_at(b, a, 128, 1);
    if (!p || a % 64)
        return p ? fail(b, in, "a tensor map must be 64-byte aligned") : E_FAULT;
    sim_tensormap m;
    memcpy(&m, p, sizeof m);
    unsigned k = in->vec;
    switch (in->mode) {
    case TMAP_GLOBAL_ADDRESS: m.addr = v; break;
    case TMAP_RANK: m.rank_m1 = (uint8_t)(v > 4 ? 255 : v); break;
    case TMAP_BOX_DIM: m.box[k] = (uint16_t)(v > 256 ? 0 : v); break;
    case TMAP_GLOBAL_DIM: m.dim[k] = (uint32_t)v; break;
    case TMAP_GLOBAL_STRIDE:
        if (k > 3)
            return fail(b, in, "tensormap.replace.global_stride's ordinal must be 0..3");
        m.stride[k] = v;
        break;
    case TMAP_ELEMENT_STRIDE: m.estride[k] = (uint8_t)(v > 8 ? 0 : v); break;
    case TMAP_ELEMTYPE: m.elemtype = (uint8_t)(v > 255 ? 255 : v); break;
    case TMAP_INTERLEAVE: m.interleave = (uint8_t)(v ? 1 : 0); break;
    case TMAP_SWIZZLE: m.swizzle = (uint8_t)(v > 3 ? 255 : v); break;
    case TMAP_FILL: m.fill = (uint8_t)(v ? 1 : 0); break;
    default: return fail(b, in, "tensormap.replace.swizzle_atomicity is not supported");
    }
    memcpy(p, &m, sizeof m);
    if (sh >= 0)
        ptx_proxy_written(b, (uint64_t)sh, 128);
    return 0;
}

static int tmap_copy(block_ctx *b, frame *fr, const pinsn *in, int l)
{
    uint64_t dst = fr->R[in->a][l] + (uint64_t)in->imm;
    int64_t src = shared_off(b, fr->R[in->b][l] + (uint64_t)(int64_t)in->aux, S_SHARED, 128);
    uint8_t *p = ptx_global_at(b, dst, 128, 1);
    if (src < 0 || !p || dst % 64 || src % 64)
        return src < 0 || !p ? E_FAULT : fail(b, in, "a tensor map must be 64-byte aligned");
    memcpy(p, b->shared + src, 128);
    return 0;
}

int ptx_exec_bulk(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    if (in->op == OP_BULK_COMMIT) {
        FOR_LANES(m, w->bulk_groups[l]++);
        return 0;
    }
    if (in->op == OP_BULK_WAIT)
        return b->nbl ? bulk_wait(b, w, in, m) : 0;
    FOR_LANES(m, {
        int rc = in->op == OP_BULK_COPY       ? bulk_plain(b, w, fr, in, l)
                 : in->op == OP_BULK_TENSOR   ? bulk_tensor(b, w, fr, in, l)
                 : in->op == OP_BULK_PREFETCH ? bulk_prefetch(b, w, fr, in, l)
                 : in->op == OP_TMAP_COPY   ? tmap_copy(b, fr, in, l)
                                            : tmap_replace(b, fr, in, l);
        if (rc)
            return rc;
    });
    return 0;
}
