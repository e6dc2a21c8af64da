/* PTX mbarriers (sm_80 arrive/wait, sm_90 transaction counts), for the
 * interpreter: mbarrier.init, inval, arrive[.expect_tx], expect_tx,
 * complete_tx, test_wait and try_wait (with a state or .parity), and
 * pending_count.
 *
 * An mbarrier is 8 bytes of shared memory, opaque to the program; cuda-sim
 * keeps its whole state there:
 *   bits  0-19  the expected arrival count (init's count)
 *   bits 20-39  the arrivals still pending in the current phase
 *   bits 40-60  the tx-count (21-bit two's complement, within +-(2^20 - 1))
 *   bit  62     the current phase's parity
 *   bit  63     initialized (init sets it, inval clears it)
 * A phase completes when its pending arrivals and its tx-count are both
 * zero: the parity flips and the pending count is the expected one again.
 * The state arrive returns is the value after its arrival, with the parity
 * of the phase it arrived on.
 *
 * Ordering.  A bulk or tensor copy that completes an mbarrier's
 * transactions lands in shared memory only when a thread waits on the
 * phase it belongs to (ptx_bulk_flush): a kernel that reads the copy's
 * destination without that wait (or with the wrong parity) reads pending
 * bytes, which fails the launch naming both lines (ptx_cp_hazard).  A wait
 * whose phase has not completed parks the warp's lanes at the wait while
 * the block's other warps run (a legal schedule); when no warp can make
 * progress, each parked wait is let return false once (try_wait may time
 * out, test_wait never blocks), and if still nothing moves the launch fails
 * naming the wait that can never complete.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_exec.h"

#define MB_VALID (1ull << 63)
#define MB_PHASE (1ull << 62)
#define MB_MAX 0xfffffu

static uint32_t mb_expected(uint64_t v) { return (uint32_t)(v & MB_MAX); }
static uint32_t mb_pending(uint64_t v) { return (uint32_t)(v >> 20 & MB_MAX); }
static int32_t mb_tx(uint64_t v)
{
    int32_t t = (int32_t)(v >> 40 & 0x1fffff);
    return t & 0x100000 ? t - 0x200000 : t;
}
static uint64_t mb_make(uint64_t phase, uint32_t expected, uint32_t pending, int32_t tx)
{
    return MB_VALID | (phase & MB_PHASE) | (uint64_t)expected | (uint64_t)pending << 20 |
           ((uint64_t)(uint32_t)tx & 0x1fffff) << 40;
}

static int say(block_ctx *b, const pinsn *in, const char *what, uint64_t off)
{
    fprintf(stderr, "cuda-sim: kernel %s: ptx line %d: %s (the mbarrier at shared offset %llu)\n",
            b->entry->name, in ? in->line : 0, what, (unsigned long long)off);
    return E_FAIL;
}

/* Lane l's mbarrier: its offset in shared memory, or a negative status. */
static int64_t locate(block_ctx *b, frame *fr, const pinsn *in, int l)
{
    uint64_t a = fr->R[in->a][l] + (uint64_t)in->imm, sh = (uintptr_t)b->shared;
    if (in->space == S_GENERIC) {
        if (a < sh || a - sh >= b->shared_size) {
            fprintf(stderr,
                    "cuda-sim: kernel %s: ptx line %d: an mbarrier must be in shared memory, "
                    "not at generic address 0x%llx\n",
                    b->entry->name, in->line, (unsigned long long)a);
            return E_FAIL;
        }
        a -= sh;
    }
    if (a % 8 || !sim_inside(a, 8, 0, b->shared_size))
        return E_FAULT;
    return (int64_t)a;
}

static uint64_t get(block_ctx *b, uint64_t off)
{
    uint64_t v;
    memcpy(&v, b->shared + off, 8);
    return v;
}

static void put(block_ctx *b, uint64_t off, uint64_t v)
{
    memcpy(b->shared + off, &v, 8);
    b->mb_epoch++;
}

/* The phase completes when nothing is pending. */
static uint64_t settle(uint64_t v)
{
    if (mb_pending(v) || mb_tx(v))
        return v;
    return mb_make((v ^ MB_PHASE) & MB_PHASE, mb_expected(v), mb_expected(v), 0);
}

static int tx_add(block_ctx *b, const pinsn *in, uint64_t off, int64_t n)
{
    uint64_t v = get(b, off);
    if (!(v & MB_VALID))
        return say(b, in, "a transaction count on an uninitialized mbarrier", off);
    int64_t tx = mb_tx(v) + n;
    if (tx > (int64_t)MB_MAX || tx < -(int64_t)MB_MAX)
        return say(b, in, "the tx-count leaves the range +-(2^20 - 1)", off);
    put(b, off, settle(mb_make(v, mb_expected(v), mb_pending(v), (int32_t)tx)));
    return 0;
}


/* The loads a wait on the mbarrier at shared offset mbar lands: their bytes
 * reach shared memory and complete as transactions. */
int ptx_bulk_flush(block_ctx *b, uint64_t mbar)
{
    for (uint32_t i = 0; i < b->nbl;) {
        bulk_op *op = &b->bl[i];
        if (op->store || op->mbar != mbar) {
            i++;
            continue;
        }
        memcpy(b->shared + op->soff, op->data, op->size);
        for (uint32_t k = 0; k < op->size; k++)
            b->cp_busy[op->soff + k]--;
        pinsn at = {.line = op->line};
        uint32_t n = op->size;
        free(op->data);
        b->bl[i] = b->bl[--b->nbl];
        if (tx_add(b, &at, mbar, -(int64_t)n))
            return E_FAIL;
    }
    return 0;
}

int ptx_bulk_pending(const block_ctx *b, uint64_t mbar)
{
    for (uint32_t i = 0; i < b->nbl; i++)
        if (!b->bl[i].store && b->bl[i].mbar == mbar)
            return 1;
    return 0;
}

static int arrive(block_ctx *b, const pinsn *in, uint64_t off, uint32_t count, uint32_t tx,
                  uint64_t *state)
{
    if (tx && tx_add(b, in, off, tx))
        return E_FAIL;
    uint64_t v = get(b, off);
    if (!(v & MB_VALID))
        return say(b, in, "mbarrier.arrive on an uninitialized mbarrier", off);
    if (!count || count > mb_pending(v))
        return say(b, in, "mbarrier.arrive with a count over the pending arrivals (undefined)",
                    off);
    v = mb_make(v, mb_expected(v), mb_pending(v) - count, mb_tx(v));
    *state = v;
    put(b, off, settle(v));
    return 0;
}

static int one_lane(block_ctx *b, frame *fr, const pinsn *in, int l)
{
    int64_t off = locate(b, fr, in, l);
    if (off < 0)
        return (int)off;
    uint32_t n = in->b != PTX_NONE ? (uint32_t)fr->R[in->b][l] : 1;
    uint64_t v = get(b, (uint64_t)off);
    switch (in->op) {
    case OP_MBAR_INIT:
        if (!n || n > MB_MAX)
            return say(b, in, "mbarrier.init's count must be 1..2^20-1", (uint64_t)off);
        put(b, (uint64_t)off, mb_make(0, n, n, 0));
        return 0;
    case OP_MBAR_INVAL:
        if (ptx_bulk_pending(b, (uint64_t)off))
            return say(b, in, "mbarrier.inval while a bulk copy will still complete it",
                        (uint64_t)off);
        put(b, (uint64_t)off, 0);
        return 0;
    case OP_MBAR_EXPECT_TX:
        return tx_add(b, in, (uint64_t)off, n);
    case OP_MBAR_COMPLETE_TX:
        return tx_add(b, in, (uint64_t)off, -(int64_t)n);
    default: { /* OP_MBAR_ARRIVE */
        uint32_t tx = in->c != PTX_NONE ? (uint32_t)fr->R[in->c][l] : 0;
        (void)v;
        return arrive(b, in, (uint64_t)off, n, tx, &fr->R[in->d][l]);
    }
    }
}

int ptx_exec_mbar(block_ctx *b, frame *fr, const pinsn *in, uint32_t m)
{
    if (in->op == OP_MBAR_PENDING) {
        FOR_LANES(m, fr->R[in->d][l] = mb_pending(fr->R[in->b][l]));
        return 0;
    }
    FOR_LANES(m, {
        int rc = one_lane(b, fr, in, l);
        if (rc)
            return rc;
    });
    return 0;
}

/* Whether the phase lane l waits for has completed: a parity names the
 * current phase (not complete) or the one before it (complete). */
static int completed(const pinsn *in, uint64_t v, uint64_t operand)
{
    uint64_t waited = in->mode & 1 ? (operand & 1) << 62 : operand & MB_PHASE;
    return (v & MB_PHASE) != waited;
}

int ptx_mbar_wait(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m,
                  uint32_t *park)
{
    *park = 0;
    FOR_LANES(m, {
        int64_t off = locate(b, fr, in, l);
        if (off < 0)
            return (int)off;
        if (!(get(b, (uint64_t)off) & MB_VALID))
            return say(b, in, "a wait on an uninitialized mbarrier", (uint64_t)off);
        uint64_t operand = fr->R[in->b][l];
        if (!completed(in, get(b, (uint64_t)off), operand) && ptx_bulk_flush(b, (uint64_t)off))
            return E_FAIL;
        int done = completed(in, get(b, (uint64_t)off), operand);
        fr->R[in->d][l] = (uint64_t)done;
        if (!done && !w->mb_pass)
            *park |= 1u << l;
    });
    w->mb_pass = 0; /* spent, or not needed */
    return 0;
}

void ptx_mbar_deadlock(block_ctx *b)
{
    for (uint32_t wi = 0; wi < b->nwarps; wi++) {
        frame *fr = &b->warps[wi].top;
        if (!fr->mbwait)
            continue;
        int l = __builtin_ctz(fr->mbwait);
        const pinsn *in = &fr->f->code[fr->pc[l]];
        int64_t off = locate(b, fr, in, l);
        uint64_t v = off >= 0 ? get(b, (uint64_t)off) : 0;
        fprintf(stderr,
                "cuda-sim: kernel %s: ptx line %d: warp %u waits on an mbarrier phase that can "
                "never complete: the mbarrier at shared offset %lld is in phase parity %d with "
                "%u of %u arrivals pending and tx-count %d, and no thread of the block can "
                "arrive\n",
                b->entry->name, in->line, wi, (long long)off, (int)(v >> 62 & 1), mb_pending(v),
                mb_expected(v), mb_tx(v));
        return;
    }
}
