/* PTX asynchronous copies (sm_80), for the interpreter: cp.async,
 * cp.async.commit_group, cp.async.wait_group N and cp.async.wait_all.
 *
 * The PTX ISA leaves a cp.async's copy in flight until a wait completes its
 * group: reading its destination before then reads whatever the hardware has
 * got to, and writing it races with the copy.  The interpreter never lets
 * such a kernel work by accident:
 *   - cp.async only records the copy (its source is checked at once: a bad
 *     address faults at the cp.async, as a load would);
 *   - commit_group closes the lane's current group; wait_group N performs,
 *     in issue order, the lane's copies of every committed group but the N
 *     most recent; wait_all is commit_group then wait_group 0;
 *   - an ld, st, atom, ldmatrix, wmma or wgmma that touches a shared byte a pending copy
 *     writes fails the launch, naming its line and the copy's (as does a
 *     cp.async whose destination overlaps a pending one's: their order is
 *     undefined).
 * A copy reads src-size bytes (cp-size when absent, none with ignore-src
 * true) from the source and zero-fills the rest of its cp-size bytes;
 * src-size above cp-size is undefined, so it fails the launch.  Copies a
 * block leaves pending when it ends are dropped: shared memory dies with it.
 *
 * The generic and async proxies (sm_90): in a kernel that has wgmma, every
 * shared byte written by st, atom, a completed cp.async or wmma.store.d is
 * marked until a fence.proxy.async (ptx_proxy_written, ptx_proxy_fence);
 * wgmma.mma_async reading a marked byte fails the launch (ptx_exec_wgmma.c).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_exec.h"

static const char *name_of(const pinsn *in)
{
    switch (in->op) {
    case OP_LD: return "ld";
    case OP_ST: return "st";
    case OP_LDMATRIX: return "ldmatrix";
    case OP_STMATRIX: return "stmatrix";
    case OP_CP_ASYNC: return "cp.async";
    case OP_BULK_COPY:
    case OP_BULK_TENSOR: return "cp.async.bulk";
    case OP_WMMA_LOAD:
    case OP_WMMA_STORE: return "wmma";
    case OP_WGMMA_MMA: return "wgmma.mma_async";
    default: return "atom";
    }
}

static int writes_of(const pinsn *in)
{
    return in->op == OP_ST || in->op == OP_CP_ASYNC || in->op == OP_STMATRIX ||
           in->op == OP_WMMA_STORE || in->op == OP_BULK_COPY || in->op == OP_BULK_TENSOR ||
           in->op == OP_ATOM || in->op == OP_RED;
}

const bulk_op *ptx_bulk_at(const block_ctx *b, uint64_t off)
{
    for (uint32_t i = 0; i < b->nbl; i++)
        if (!b->bl[i].store && off >= b->bl[i].soff && off < (uint64_t)b->bl[i].soff + b->bl[i].size)
            return &b->bl[i];
    return NULL;
}

int ptx_bulk_write_hazard(block_ctx *b, const pinsn *in, uint64_t off, size_t n)
{
    for (uint32_t i = 0; i < b->nbl; i++) {
        const bulk_op *op = &b->bl[i];
        if (op->store && !op->read && off < (uint64_t)op->soff + op->size &&
            op->soff < off + n) {
            fprintf(stderr,
                    "cuda-sim: kernel %s: ptx line %d: writes shared memory at offset %llu, the "
                    "source of the cp.async.bulk of ptx line %d, before a "
                    "cp.async.bulk.wait_group.read covered that copy\n",
                    b->entry->name, in->line, (unsigned long long)off, op->line);
            return E_FAIL;
        }
    }
    return 0;
}

int ptx_cp_hazard(block_ctx *b, const pinsn *in, uint64_t off, size_t n)
{
    if (!b->cp_busy || off >= b->shared_size)
        return 0;
    size_t end = off + n < b->shared_size ? off + n : b->shared_size, k = off;
    while (k < end && !b->cp_busy[k])
        k++;
    if (k == end)
        return 0;
    const cp_copy *c = b->cp;
    while (c < b->cp + b->ncp && !(k >= c->dst && k < (uint64_t)c->dst + c->size))
        c++;
    const bulk_op *bk = c < b->cp + b->ncp ? NULL : ptx_bulk_at(b, k);
    fprintf(stderr,
            "cuda-sim: kernel %s: ptx line %d: %s %s shared memory at offset %zu, the "
            "destination of the %s of ptx line %d, before %s completed that copy\n",
            b->entry->name, in->line, name_of(in), writes_of(in) ? "writes" : "reads", k,
            bk ? "cp.async.bulk" : "cp.async", bk ? bk->line : c < b->cp + b->ncp ? c->line : 0,
            bk ? "a wait on its mbarrier's phase" : "a cp.async.wait_group or wait_all");
    return E_FAIL;
}

void ptx_proxy_fence(block_ctx *b)
{
    if (b->gdirty)
        memset(b->gdirty, 0, b->shared_size);
}

void ptx_proxy_written(block_ctx *b, uint64_t off, size_t n)
{
    if (b->gdirty && off < b->shared_size)
        memset(b->gdirty + off, 1, off + n <= b->shared_size ? n : b->shared_size - off);
}

int ptx_shared_access(block_ctx *b, const pinsn *in, const uint64_t *A, size_t n, uint32_t m)
{
    uintptr_t sh = (uintptr_t)b->shared;
    int writes = in->op != OP_LD;
    FOR_LANES(m, {
        uint64_t a = A[l] + (uint64_t)in->imm;
        if (in->space == S_GENERIC) {
            if (a < sh || a >= sh + b->shared_size)
                continue;
            a -= sh;
        } else if (in->space != S_SHARED) {
            return 0;
        }
        if ((b->ncp || b->nbl) && ptx_cp_hazard(b, in, a, n))
            return E_FAIL;
        if (writes && b->nbl && ptx_bulk_write_hazard(b, in, a, n))
            return E_FAIL;
        if (writes)
            ptx_proxy_written(b, a, n);
    });
    return 0;
}

void ptx_cp_reset(block_ctx *b)
{
    if (b->ncp && b->cp_busy)
        memset(b->cp_busy, 0, (size_t)b->shared_size * sizeof *b->cp_busy);
    b->ncp = 0;
}

static int undefined_size(block_ctx *b, const pinsn *in, uint64_t srcn)
{
    fprintf(stderr,
            "cuda-sim: kernel %s: ptx line %d: cp.async's src-size %llu is over its cp-size %d "
            "(undefined)\n",
            b->entry->name, in->line, (unsigned long long)srcn, in->vec);
    return E_FAIL;
}

/* Records lane l's copy, after checking both of its addresses. */
static int issue_one(block_ctx *b, warp *w, frame *fr, const pinsn *in, int l)
{
    uint64_t dst = fr->R[in->a][l] + (uint64_t)in->imm;
    uint64_t src = fr->R[in->b][l] + (uint64_t)(int64_t)in->aux;
    uint64_t srcn = in->vec;
    if (in->c != PTX_NONE)
        srcn = (uint32_t)fr->R[in->c][l];
    else if (in->e != PTX_NONE && (fr->R[in->e][l] & 1))
        srcn = 0;
    if (srcn > in->vec)
        return undefined_size(b, in, srcn);
    if ((dst | src) & (in->vec - 1u) || !sim_inside(dst, in->vec, 0, b->shared_size) ||
        (srcn && !ptx_global_at(b, src, srcn, 0)))
        return E_FAULT;
    if (ptx_cp_hazard(b, in, dst, in->vec))
        return E_FAIL;
    if (!b->cp_busy && !(b->cp_busy = calloc(b->shared_size, sizeof *b->cp_busy)))
        return E_FAIL;
    if (b->ncp == b->cap_cp) {
        uint32_t cap = b->cap_cp ? 2 * b->cap_cp : 256;
        cp_copy *p = realloc(b->cp, cap * sizeof *p);
        if (!p)
            return E_FAIL;
        b->cp = p;
        b->cap_cp = cap;
    }
    b->cp[b->ncp++] = (cp_copy){src, (uint32_t)dst, w->cp_groups[l], in->line, (uint16_t)w->id,
                                (uint8_t)l, in->vec, (uint8_t)srcn};
    for (uint32_t k = 0; k < in->vec; k++)
        b->cp_busy[dst + k]++;
    return 0;
}

/* Performs the copies of warp w's lanes in m that belong to groups older
 * than each lane's n most recent, in issue order, and drops them. */
static void complete(block_ctx *b, warp *w, uint32_t m, uint64_t n)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < b->ncp; i++) {
        cp_copy c = b->cp[i];
        if (c.warp != w->id || !(m >> c.lane & 1) || c.group + n >= w->cp_groups[c.lane]) {
            b->cp[kept++] = c;
            continue;
        }
        uint8_t *d = b->shared + c.dst;
        memcpy(d, (const void *)(uintptr_t)c.src, c.srcn);
        memset(d + c.srcn, 0, (size_t)(c.size - c.srcn));
        ptx_proxy_written(b, c.dst, c.size);
        for (uint32_t k = 0; k < c.size; k++)
            b->cp_busy[c.dst + k]--;
    }
    b->ncp = kept;
}

int ptx_exec_async(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    switch (in->op) {
    case OP_CP_ASYNC:
        FOR_LANES(m, {
            int rc = issue_one(b, w, fr, in, l);
            if (rc)
                return rc;
        });
        return 0;
    case OP_CP_COMMIT:
        FOR_LANES(m, w->cp_groups[l]++);
        return 0;
    default: /* OP_CP_WAIT */
        if (in->mode)
            FOR_LANES(m, w->cp_groups[l]++);
        if (b->ncp)
            complete(b, w, m, (uint64_t)in->imm);
        return 0;
    }
}
