/* The PTX interpreter: runs a decoded .entry over a launch's blocks.
 *
 * A block runs on the calling thread, a warp of 32 lanes at a time; the
 * engine spreads a launch's blocks over its kernel threads and hands each a
 * [begin, end) range.  Each instruction executes for the lanes of the
 * warp's active mask in one loop, so dispatch is paid once per warp.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_exec.h"

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

static int do_call(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t fi, uint32_t m)
{
    const pfunc *cf = &b->mod->funcs[fi];
    const pcall *c = &fr->f->calls[in->aux];
    uint32_t la = b->mod->local_align;
    uint32_t base = fr->local_base + ((fr->f->local_bytes + la - 1) & ~(la - 1));
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
            uint8_t *to = fr->pf + (size_t)l * fr->f->frame_bytes;
            for (int k = 0; k < c->nrets; k++) {
                if ((uint32_t)k < cf->nrets)
                    memcpy(to + c->ret_off[k], callee.pf + (size_t)l * cf->frame_bytes + cf->rets[k].offset,
                           cf->rets[k].size);
                else /* a return the callee does not make (see ptx_module_load) */
                    memset(to + c->ret_off[k], 0, c->ret_size[k]);
            }
        });
        fr->exited |= callee.exited;
        fr->active &= ~callee.exited;
        r = R_DONE;
    }
    free(callee.R);
    free(callee.pf);
    return r;
}

/* A call through a function address: the lanes calling one address at a
 * time.  An address that is not a function of this module, or one whose
 * parameters differ from the call's, fails the launch, naming it. */
static int do_indirect(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    const uint64_t *T = fr->R[in->a];
    const pcall *c = &fr->f->calls[in->aux];
    while (m) {
        uint64_t v = T[__builtin_ctz(m)];
        uint32_t same = 0;
        FOR_LANES(m, same |= (uint32_t)(T[l] == v) << l);
        uint64_t fi = (v & ~PTX_FUNC_ADDR_BASE) >> 4;
        const pfunc *cf = fi < b->mod->nfuncs ? &b->mod->funcs[fi] : NULL;
        if (v != PTX_FUNC_ADDR(fi) || !cf || !cf->defined || cf->is_entry ||
            cf->nparams != (uint32_t)c->nargs || cf->uses_barrier ||
            (cf->nrets != (uint32_t)c->nrets && cf->nrets != 0)) {
            fprintf(stderr, "cuda-sim: kernel %s: indirect call of 0x%llx, %s\n", b->entry->name,
                    (unsigned long long)v, cf && v == PTX_FUNC_ADDR(fi)
                        ? "whose parameters or barriers the call cannot take"
                        : "which is no function of this module");
            return E_FAIL;
        }
        int rc = do_call(b, w, fr, in, (uint32_t)fi, same);
        if (rc < 0)
            return rc;
        m &= ~same;
    }
    return 0;
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


/* ------------------------------------------------------------- control flow */

static void exec_branch(frame *fr, const pinsn *in, uint32_t m)
{
    uint32_t taken = m, stay = fr->active & ~m;
    uint32_t target = (uint32_t)in->target;
    if (!taken) {
        fr->cur_pc++;
        return;
    }
    if (stay) {
        /* Divergence: the fall-through group and the taken group wait; the
         * lower pc runs first. */
        wait_at(fr, stay, fr->cur_pc + 1);
        wait_at(fr, taken, target);
        fr->active = 0;
        return;
    }
    fr->cur_pc = target;
    if (fr->waiting) {
        recompute_next(fr);
        /* Jumped past a waiting group: let the lowest pc run first. */
        if (fr->wmin_unparked < fr->cur_pc) {
            wait_at(fr, fr->active, fr->cur_pc);
            fr->active = 0;
        }
    }
}

static void exec_return(warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    if (in->op == OP_EXIT || fr->f->is_entry) {
        w->exited |= m;
        fr->exited |= m;
    }
    fr->done |= m;
    fr->active &= ~m;
    fr->cur_pc++;
}

/* A group's arrival at bar.red: adds its predicates to the block's
 * reduction.  -1 when the block's other arrivals are at another kind of
 * barrier, which the sim does not pair up. */
static int arrive_red(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    if (b->bar_arrivals && b->bar_red != in->mode)
        return -1;
    b->bar_red = in->mode;
    uint32_t neg = (in->neg >> 2) & 1, set = 0;
    FOR_LANES(m, set |= (uint32_t)((fr->R[in->c][l] & 1) ^ neg) << l);
    b->red_popc += (uint32_t)__builtin_popcount(set);
    b->red_all &= (set & m) == m;
    b->red_any |= set != 0;
    w->red_dst = in->d;
    w->red_lanes |= m;
    return 0;
}

static int exec_barrier(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    if (!m) {
        fr->cur_pc++;
        return 0;
    }
    if (in->mode ? arrive_red(b, w, fr, in, m) : (b->bar_arrivals && b->bar_red))
        return E_FAIL;
    b->bar_arrivals++;
    wait_at(fr, 0, 0);
    for (uint32_t q = m; q; q &= q - 1)
        fr->pc[__builtin_ctz(q)] = fr->cur_pc + 1;
    fr->blocked |= m;
    fr->active &= ~m;
    if (fr->active)
        fr->cur_pc++;
    return 0;
}

/* Every warp is at the barrier or done: bar.red's lanes get the result. */
static void release_barrier(block_ctx *b)
{
    uint32_t value = b->bar_red == BAR_RED_POPC ? b->red_popc
                     : b->bar_red == BAR_RED_AND ? b->red_all : b->red_any;
    for (uint32_t wi = 0; wi < b->nwarps; wi++) {
        warp *w = &b->warps[wi];
        frame *fr = &w->top;
        FOR_LANES(w->red_lanes, fr->R[w->red_dst][l] = value);
        w->red_lanes = 0;
        fr->wdirty = 1;
        fr->waiting |= fr->blocked;
        fr->blocked = 0;
        fr->active = 0;
        fr->cur_pc = 0;
    }
    b->bar_red = 0;
    b->bar_arrivals = b->red_popc = b->red_any = 0;
    b->red_all = 1;
}

/* shfl, vote, redux, match, bar.warp: run once the named lanes are here. */
static void exec_warp_sync(warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    uint32_t members = first_lane_u32(fr->R[in->e != PTX_NONE ? in->e : in->a], m);
    if (m && must_wait(fr, w, members)) {
        /* Park the group here until the other named lanes arrive. */
        wait_at(fr, fr->active, fr->cur_pc);
        fr->parked |= fr->active;
        fr->active = 0;
        fr->wdirty = 1;
        return;
    }
    fr->nopark_pc = PTX_NONE;
    if (in->op != OP_BARWARP && m)
        ptx_exec_warp(w, fr, in, m);
    fr->cur_pc++;
}

/* ldmatrix, mma: run once the whole warp is here (.sync.aligned). */
static int exec_matrix(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    if (m && must_wait(fr, w, FULL)) {
        wait_at(fr, fr->active, fr->cur_pc);
        fr->parked |= fr->active;
        fr->active = 0;
        fr->wdirty = 1;
        return 1;
    }
    fr->nopark_pc = PTX_NONE;
    int rc = m ? ptx_exec_matrix(b, w, fr, in, m) : 0;
    if (rc < 0)
        return rc;
    fr->cur_pc++;
    return 1;
}

/* mbarrier.test_wait / try_wait: lanes whose phase has not completed park
 * here (blocked, in mbwait) and retry when the block's next round runs. */
static int exec_mbar_wait(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    uint32_t park = 0;
    int rc = m ? ptx_mbar_wait(b, w, fr, in, m, &park) : 0;
    if (rc < 0)
        return rc;
    if (park && fr != &w->top) {
        fprintf(stderr,
                "cuda-sim: kernel %s: ptx line %d: an mbarrier wait that must block inside a "
                "called function is not supported\n",
                b->entry->name, in->line);
        return E_FAIL;
    }
    if (park) {
        wait_at(fr, 0, 0);
        for (uint32_t q = park; q; q &= q - 1)
            fr->pc[__builtin_ctz(q)] = fr->cur_pc;
        fr->blocked |= park;
        fr->mbwait |= park;
        fr->active &= ~park;
        if (!fr->active)
            return 1;
    }
    fr->cur_pc++;
    return 1;
}

/* A call and the two host calls: the callee runs, then the pc moves on. */
static int exec_call(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    if (m) {
        int rc;
        switch (in->op) {
        case OP_CALL: rc = do_call(b, w, fr, in, (uint32_t)in->target, m); break;
        case OP_CALLI: rc = do_indirect(b, w, fr, in, m); break;
        case OP_VPRINTF: rc = ptx_exec_vprintf(b, w, fr, in, m); break;
        default: rc = ptx_exec_assertfail(b, w, fr, in, m); break;
        }
        if (rc < 0)
            return rc;
    }
    fr->cur_pc++;
    return 1;
}

/* The instructions that move the pc themselves: 1 when in is one (done),
 * 0 when it is not, or a negative status. */
static inline int exec_control(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    switch (ptx_route_of[in->op]) {
    case ROUTE_BRANCH:
        exec_branch(fr, in, m);
        return 1;
    case ROUTE_RETURN:
        exec_return(w, fr, in, m);
        return 1;
    case ROUTE_TRAP:
        if (m)
            return E_FAIL;
        fr->cur_pc++;
        return 1;
    case ROUTE_BARRIER:
        return exec_barrier(b, w, fr, in, m) ? E_FAIL : 1;
    case ROUTE_CALL:
    case ROUTE_HOSTCALL:
        return exec_call(b, w, fr, in, m);
    case ROUTE_WARP:
        exec_warp_sync(w, fr, in, m);
        return 1;
    case ROUTE_MBAR_WAIT:
        return exec_mbar_wait(b, w, fr, in, m);
    case ROUTE_MATRIX:
        return exec_matrix(b, w, fr, in, m);
    case ROUTE_ACTIVEMASK:
        FOR_LANES(m, fr->R[in->d][l] = fr->active);
        fr->cur_pc++;
        return 1;
    default:
        return 0;
    }
}

/* Runs a frame until its lanes are done or all wait at a barrier. */
static int run_frame(block_ctx *b, warp *w, frame *fr)
{
    const pinsn *code = fr->f->code;
    lanes_t *R = fr->R;
    for (;;) {
        if (!fr->active && !reschedule(fr))
            return fr->blocked ? R_BARRIER : R_DONE;
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
        int rc = exec_control(b, w, fr, in, m);
        if (rc == 0 && m)
            rc = ptx_exec_data(b, w, fr, in, m);
        else if (rc > 0)
            continue;
        if (rc < 0)
            return rc;
        fr->cur_pc++;
    }
}

/* ------------------------------------------------------------- launch */

/* Lanes parked at an mbarrier wait run it again. */
static void resume_mbar(frame *fr)
{
    fr->waiting |= fr->mbwait;
    fr->blocked &= ~fr->mbwait;
    fr->mbwait = 0;
    fr->wdirty = 1;
    fr->active = 0;
}

/* Runs every unfinished warp of the block until it finishes, reaches
 * bar.sync or parks at an mbarrier wait: 1 when the block goes on, 0 when
 * it is done, or a negative status.  bar.sync releases once no warp waits
 * on an mbarrier; a round in which nothing moved gives each parked wait one
 * false return, and a second such round is a deadlock. */
static int run_round(block_ctx *b)
{
    int live = 0, parked = 0, moved = 0;
    uint64_t epoch = b->mb_epoch;
    uint32_t arrivals = b->bar_arrivals;
    for (uint32_t wi = 0; wi < b->nwarps; wi++) {
        warp *w = &b->warps[wi];
        if (w->finished)
            continue;
        if (w->top.mbwait)
            resume_mbar(&w->top);
        int r = run_frame(b, w, &w->top);
        if (r < 0)
            return r;
        if (r == R_BARRIER) {
            live = 1;
            parked |= w->top.mbwait != 0;
        } else {
            w->finished = moved = 1;
        }
    }
    if (!live)
        return 0;
    if (!parked) {
        release_barrier(b);
        b->mb_stuck = 0;
        return 1;
    }
    if (moved || b->mb_epoch != epoch || b->bar_arrivals != arrivals) {
        b->mb_stuck = 0;
        return 1;
    }
    if (b->mb_stuck) {
        ptx_mbar_deadlock(b);
        return E_FAIL;
    }
    b->mb_stuck = 1;
    for (uint32_t wi = 0; wi < b->nwarps; wi++)
        b->warps[wi].mb_pass = b->warps[wi].top.mbwait != 0;
    return 1;
}

/* Zeroed memory whose address is a multiple of align (a power of two >= 16),
 * so that .align on .shared and .local holds for the generic addresses. */
static void *aligned_zero(size_t align, size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, align, n))
        return NULL;
    memset(p, 0, n);
    return p;
}

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
    b.ro = arsim_running_readonly();
    b.nthreads = L->block.x * L->block.y * L->block.z;
    b.nwarps = (b.nthreads + 31) / 32;
    b.dyn_size = L->shared_bytes;
    b.shared_size = f->shared_static + L->shared_bytes;
    b.stack = (mod->max_local + mod->local_align - 1) & ~(mod->local_align - 1);
    int rc = 0;
    b.params = calloc(1, f->param_bytes ? f->param_bytes : 1);
    b.shared = aligned_zero(mod->shared_align, b.shared_size ? b.shared_size : 1);
    b.warps = calloc(b.nwarps, sizeof *b.warps);
    if (mod->uses_wgmma)
        b.gdirty = calloc(1, b.shared_size ? b.shared_size : 1);
    if (!b.params || !b.shared || !b.warps || (mod->uses_wgmma && !b.gdirty)) {
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
        w->local = b.stack ? aligned_zero(mod->local_align, (size_t)PTX_LANES * b.stack) : NULL;
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
            w->red_lanes = 0;
            memset(w->cp_groups, 0, sizeof w->cp_groups);
            w->wg_groups = 0;
            w->wg_fenced = 0;
            memset(w->bulk_groups, 0, sizeof w->bulk_groups);
            w->mb_pass = 0;
            fr->mbwait = 0;
        }
        ptx_cp_reset(&b);
        b.nwg = 0;
        if (b.gdirty)
            memset(b.gdirty, 0, b.shared_size);
        b.bar_red = 0;
        b.bar_arrivals = b.red_popc = b.red_any = 0;
        b.red_all = 1;
        b.mb_stuck = 0;
        do
            rc = run_round(&b);
        while (rc > 0);
        if (b.nbl) {
            int end = ptx_bulk_end(&b, rc == 0);
            rc = rc ? rc : end;
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
    free(b.cp);
    free(b.cp_busy);
    free(b.wg);
    free(b.bl);
    free(b.gdirty);
    free(b.shared);
    free(b.params);
    return rc == E_FAULT && b.misaligned ? E_MISALIGNED : rc;
}

/* Runs the blocks [block_begin, block_end) on the calling thread.  Only the
 * engine splits a grid (over ARUNTIME_SIM_KERNEL_THREADS threads, each with
 * its own range), so the executor starts no threads of its own. */
int ptx_run(void *kernel_ctx, const ar_launch *launch, void **params)
{
    int rc = run_blocks(kernel_ctx, launch, params, launch->block_begin, launch->block_end);
    if (rc == E_MISALIGNED)
        return ARSIM_ERR_MISALIGNED_ADDRESS;
    if (rc == E_FAULT)
        return ARSIM_ERR_ILLEGAL_ADDRESS;
    if (rc == E_ASSERT)
        return ARSIM_ERR_ASSERT;
    return rc ? -1 : 0;
}
