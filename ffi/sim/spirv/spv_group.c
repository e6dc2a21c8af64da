/* SPIR-V interpreter: work-groups.  A group's work-items run one at a time
 * on the calling thread (spv_exec.c runs each), each until it finishes or
 * reaches a barrier or a collective.  When every work-item of a group waits
 * at the barrier, they all go on; when a sub-group's work-items wait at the
 * same collective, it is computed from their values and they go on.
 * Anything else (some finished, others wait; different barriers) is a
 * divergent barrier: the launch fails.
 *
 * spv_kernel_run runs exactly the block range the engine gives it: the
 * engine alone splits a grid over threads (ARUNTIME_SIM_KERNEL_THREADS). */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../engine.h"
#include "spv_exec.h"

#define LZ_VALS_MAX SPV_SUBGROUP_SIZE

/* ------------------------------------------------------------ collectives */

static uint64_t identity(uint32_t kind, uint32_t w)
{
    switch (kind) {
    case C_IMUL: return 1;
    case C_FMUL: return w == 64 ? sim_f64_bits(1.0) : w == 16 ? 0x3C00u : sim_f32_bits(1.0f);
    case C_FMIN: return w == 64 ? sim_f64_bits(INFINITY) : w == 16 ? 0x7C00u : sim_f32_bits(INFINITY);
    case C_FMAX: return w == 64 ? sim_f64_bits(-INFINITY) : w == 16 ? 0xFC00u : sim_f32_bits(-INFINITY);
    case C_UMIN: case C_AND: return sim_mask(w);
    case C_SMIN: return sim_mask(w) >> 1;
    case C_SMAX: return (sim_mask(w) >> 1) + 1;
    case C_LAND: return 1;
    default: return 0;
    }
}

/* A half operation of two halves: in double, where their sum and product are
 * exact, then rounded once to half (rte), as IEEE half arithmetic is. */
static uint64_t half_op2(uint32_t kind, uint64_t a, uint64_t b)
{
    double x = fval(a, 16), y = fval(b, 16);
    switch (kind) {
    case C_FADD: return spvx_double_to_half(x + y);
    case C_FMUL: return spvx_double_to_half(x * y);
    case C_FMIN: return spvx_double_to_half(fmin(x, y));
    default: return spvx_double_to_half(fmax(x, y));
    }
}

static uint64_t op2(uint32_t kind, uint32_t w, uint64_t a, uint64_t b)
{
    if (w == 16 && (kind == C_FADD || kind == C_FMUL || kind == C_FMIN || kind == C_FMAX))
        return half_op2(kind, a, b);
    switch (kind) {
    case C_IADD: return (a + b) & sim_mask(w);
    case C_IMUL: return (a * b) & sim_mask(w);
    case C_FADD: return w == 64 ? sim_f64_bits(sim_f64(a) + sim_f64(b)) : sim_f32_bits(sim_f32(a) + sim_f32(b));
    case C_FMUL: return w == 64 ? sim_f64_bits(sim_f64(a) * sim_f64(b)) : sim_f32_bits(sim_f32(a) * sim_f32(b));
    case C_FMIN: return w == 64 ? sim_f64_bits(fmin(sim_f64(a), sim_f64(b))) : sim_f32_bits(fminf(sim_f32(a), sim_f32(b)));
    case C_FMAX: return w == 64 ? sim_f64_bits(fmax(sim_f64(a), sim_f64(b))) : sim_f32_bits(fmaxf(sim_f32(a), sim_f32(b)));
    case C_UMIN: return a < b ? a : b;
    case C_UMAX: return a > b ? a : b;
    case C_SMIN: return sim_sext(a, w) < sim_sext(b, w) ? a : b;
    case C_SMAX: return sim_sext(a, w) > sim_sext(b, w) ? a : b;
    case C_AND: return a & b;
    case C_OR: return a | b;
    case C_XOR: return a ^ b;
    case C_LAND: return a && b;
    case C_LOR: return a || b;
    case C_LXOR: return (a != 0) != (b != 0);
    default: return b;
    }
}

/* Broadcasts and shuffles: each work-item's value from another's.  k: the
 * component (an Intel shuffle of a vector moves each component as the scalar
 * shuffle does, every one from the same work-item; its other operand's
 * component k too). */
static void exchange(group *g, const spv_ins *I, item **m, uint32_t size, const uint64_t *v,
                     uint32_t k)
{
    const spv_program *p = g->p;
    uint32_t kind = I->c;
    uint64_t outs[LZ_VALS_MAX];
    uint64_t *out = size <= LZ_VALS_MAX ? outs : calloc(size, sizeof *out);
    if (!out)
        return;
    for (uint32_t i = 0; i < size; i++) {
        if (!m[i])
            continue;
        uint64_t *r = m[i]->regs;
        int64_t src;
        uint64_t val = 0;
        int from_other = 0;
        switch (kind) {
        case C_BROADCAST:
            if (I->n > 1) { /* a work-group local id given as a vector */
                src = (int64_t)(r[I->b] + g->size[0] * (r[I->b + 1] + (I->n > 2 ? g->size[1] * r[I->b + 2] : 0)));
            } else {
                src = (int64_t)r[I->b];
            }
            break;
        case C_SHUFFLE: src = (int64_t)(r[I->b] & 0xFFFFFFFFu); break;
        case C_SHUFFLE_XOR: src = (int64_t)(i ^ (r[I->b] & 0xFFFFFFFFu)); break;
        case C_SHUFFLE_UP: src = (int64_t)i - (int64_t)(r[I->b] & 0xFFFFFFFFu); break;
        case C_SHUFFLE_DOWN: src = (int64_t)i + (int64_t)(r[I->b] & 0xFFFFFFFFu); break;
        default: {
            uint32_t other = p->aux[I->b] + k, delta = (uint32_t)r[p->aux[I->b + 1]];
            if (kind == C_INTEL_SHUFFLE_DOWN) {
                src = (int64_t)i + delta; /* current, then next */
                if (src >= (int64_t)size) {
                    src -= size;
                    from_other = 1;
                }
            } else {
                src = (int64_t)i - delta; /* previous, then current */
                if (src < 0) {
                    src += size;
                    from_other = 1;
                } else {
                    from_other = 2;
                }
            }
            if (src >= 0 && src < (int64_t)size && m[src]) {
                if (kind == C_INTEL_SHUFFLE_DOWN)
                    val = from_other ? m[src]->regs[other] : v[src];
                else
                    val = from_other == 2 ? m[src]->regs[other] : v[src];
            }
            out[i] = val;
            continue;
        }
        }
        out[i] = src >= 0 && src < (int64_t)size && m[src] ? v[src] : 0;
    }
    for (uint32_t i = 0; i < size; i++)
        if (m[i]) m[i]->regs[I->d + k] = out[i];
    if (size > LZ_VALS_MAX)
        free(out);
}

/* Arithmetic: reduce, inclusive or exclusive scan, in id order. */
static void reduce_scan(const spv_ins *I, item **m, uint32_t size, const uint64_t *v)
{
    uint32_t kind = I->c, gop = I->e & 0xFFu, w = I->w;
    uint64_t acc = identity(kind, w);
    if (gop == SPV_GroupOperation_Reduce) {
        for (uint32_t i = 0; i < size; i++)
            if (m[i]) acc = op2(kind, w, acc, v[i]);
        for (uint32_t i = 0; i < size; i++)
            if (m[i]) m[i]->regs[I->d] = acc;
    } else {
        for (uint32_t i = 0; i < size; i++) {
            if (!m[i])
                continue;
            if (gop == SPV_GroupOperation_ExclusiveScan)
                m[i]->regs[I->d] = acc;
            acc = op2(kind, w, acc, v[i]);
            if (gop == SPV_GroupOperation_InclusiveScan)
                m[i]->regs[I->d] = acc;
        }
    }
}

/* Computes collective I for the work-items in m[0..size) (NULL: not taking
 * part), indexed by their id within the sub-group (or the work-group). */
static void collective(group *g, const spv_ins *I, item **m, uint32_t size)
{
    uint32_t kind = I->c;
    if (I->e & 0x400u)
        return; /* sub-group barrier */
    uint64_t vals[LZ_VALS_MAX];
    uint64_t *v = size <= LZ_VALS_MAX ? vals : malloc(size * sizeof *v);
    if (!v)
        return;
    for (uint32_t i = 0; i < size; i++)
        v[i] = m[i] && I->a != SPV_NONE ? m[i]->regs[I->a] : 0;
    uint32_t first = size;
    for (uint32_t i = 0; i < size; i++)
        if (m[i]) {
            first = i;
            break;
        }
    switch (kind) {
    case C_ALL: case C_ANY: {
        int all = 1, any = 0;
        for (uint32_t i = 0; i < size; i++)
            if (m[i]) {
                all &= v[i] != 0;
                any |= v[i] != 0;
            }
        for (uint32_t i = 0; i < size; i++)
            if (m[i]) m[i]->regs[I->d] = (uint64_t)(kind == C_ALL ? all : any);
        break;
    }
    case C_ELECT:
        for (uint32_t i = 0; i < size; i++)
            if (m[i]) m[i]->regs[I->d] = i == first;
        break;
    case C_BROADCAST_FIRST:
        for (uint32_t i = 0; i < size; i++)
            if (m[i]) m[i]->regs[I->d] = v[first];
        break;
    case C_BALLOT: {
        uint64_t bits = 0;
        for (uint32_t i = 0; i < size && i < 64; i++)
            if (m[i] && v[i]) bits |= 1ull << i;
        for (uint32_t i = 0; i < size; i++)
            if (m[i]) {
                m[i]->regs[I->d] = bits & 0xFFFFFFFFu;
                m[i]->regs[I->d + 1] = bits >> 32;
                m[i]->regs[I->d + 2] = 0;
                m[i]->regs[I->d + 3] = 0;
            }
        break;
    }
    case C_BROADCAST: case C_SHUFFLE: case C_SHUFFLE_XOR: case C_SHUFFLE_UP: case C_SHUFFLE_DOWN:
    case C_INTEL_SHUFFLE_DOWN: case C_INTEL_SHUFFLE_UP: {
        /* n: the lanes of a broadcast's local id; of a shuffle's value. */
        uint32_t comps = kind == C_BROADCAST ? 1 : I->n;
        for (uint32_t k = 0; k < comps; k++) {
            if (k)
                for (uint32_t i = 0; i < size; i++)
                    v[i] = m[i] ? m[i]->regs[I->a + k] : 0;
            exchange(g, I, m, size, v, k);
        }
        break;
    }
    default:
        reduce_scan(I, m, size, v);
        break;
    }
    if (v != vals)
        free(v);
}

/* ------------------------------------------------------------ work-groups */

/* The shared local memory an Xe-LP GPU gives a work-group that needs `bytes`:
 * none for none, else the next power of two, at least 1 KiB (up to 64 KiB):
 * the sizes INTERFACE_DESCRIPTOR_DATA's Shared Local Memory Size field can
 * encode on Gen9 and later (Intel's compute-runtime,
 * shared/source/gen12lp/command_encoder_gen12lp.cpp, alignSlmSize and
 * computeSlmValues; Mesa's src/intel/common/intel_compute_slm.c).  Under the
 * sanitizer, exactly `bytes`. */
static size_t local_granted(size_t bytes)
{
    if (bytes == 0 || arsim_mem_sanitizing())
        return bytes;
    size_t pad = 1024;
    while (pad < bytes)
        pad *= 2;
    return pad;
}

/* Where a work-item's by-value argument copies start in its private memory,
 * and how much private memory each work-item has. */
static size_t byval_base(const spv_func *f) { return (f->max_priv + 15u) & ~(size_t)15u; }

static size_t priv_stride(const spv_kernel *k, const spv_func *f)
{
    return byval_base(f) + ((k->byval_bytes + 15u) & ~(size_t)15u);
}

static void start_item(group *g, item *it)
{
    const spv_program *p = g->p;
    const spv_kernel *k = g->k;
    const spv_func *f = &p->funcs[k->func];
    uint64_t *regs = it->regs;
    uint32_t s = 0;
    uint64_t local_end = p->local_bytes;
    for (uint32_t i = 0; i < k->info.num_params; i++) {
        const uint8_t *src = g->params[i];
        if (k->param_kind[i] == SPV_PARAM_LOCAL) {
            /* After the __local variables and the previous __local arguments. */
            uint64_t off = spv_local_arg_offset(local_end), size;
            memcpy(&size, src, sizeof size);
            local_end = off + size;
            regs[s++] = (uint64_t)(uintptr_t)(g->local + off);
            continue;
        }
        if (k->param_kind[i] == SPV_PARAM_BYVAL) {
            /* The work-item's own copy, after its deepest stack. */
            uint8_t *copy = it->priv + byval_base(f) + k->param_off[i];
            memcpy(copy, src, k->info.param_sizes[i]);
            regs[s++] = (uint64_t)(uintptr_t)copy;
            continue;
        }
        for (uint32_t c = 0; c < k->param_n[i]; c++)
            regs[s++] = sim_load_n(src + c * k->param_bytes[i], k->param_bytes[i]);
    }
    spvx_enter(g, f, regs, it->priv);
    it->pc = f->code;
    it->func = k->func;
    it->depth = 0;
    it->state = S_RUN;
}


/* Sub-group s's collective, if some of its work-items wait at one: 1 when it
 * ran, 0 when none waits, -1 when a uniform one lacks work-items. */
static int subgroup_collective(group *g, uint32_t s)
{
    const spv_program *p = g->p;
    item *members[SPV_SUBGROUP_SIZE];
    uint32_t lo = s * SPV_SUBGROUP_SIZE;
    uint32_t size = g->nitems - lo < SPV_SUBGROUP_SIZE ? g->nitems - lo : SPV_SUBGROUP_SIZE;
    uint32_t pc0 = SPV_NONE;
    for (uint32_t i = 0; i < size && pc0 == SPV_NONE; i++) {
        const item *it = &g->items[lo + i];
        if (it->state == S_COLL && !(p->code[it->pc].e & C_SCOPE_WORKGROUP))
            pc0 = it->pc;
    }
    if (pc0 == SPV_NONE)
        return 0;
    const spv_ins *I = &p->code[pc0];
    uint32_t taking = 0;
    for (uint32_t i = 0; i < size; i++) {
        item *it = &g->items[lo + i];
        members[i] = it->state == S_COLL && it->pc == pc0 ? it : NULL;
        taking += members[i] != NULL;
    }
    /* A uniform operation needs the whole sub-group. */
    if (!(I->e & C_NON_UNIFORM) && taking != size)
        return -1;
    collective(g, I, members, size);
    for (uint32_t i = 0; i < size; i++)
        if (members[i]) {
            members[i]->pc++;
            members[i]->state = S_RUN;
        }
    return 1;
}

/* A work-group collective: every work-item at the same one; 0 or -1. */
static int workgroup_collective(group *g)
{
    const item *i0 = &g->items[0];
    for (uint32_t i = 0; i < g->nitems; i++)
        if (g->items[i].state != S_COLL || g->items[i].pc != i0->pc)
            return -1;
    item **m = malloc(g->nitems * sizeof *m);
    if (!m)
        return -1;
    for (uint32_t i = 0; i < g->nitems; i++)
        m[i] = &g->items[i];
    collective(g, &g->p->code[i0->pc], m, g->nitems);
    free(m);
    for (uint32_t i = 0; i < g->nitems; i++) {
        g->items[i].pc++;
        g->items[i].state = S_RUN;
    }
    return 0;
}

/* Runs one work-group; 0, -1, -ARSIM_ERR_ILLEGAL_ADDRESS or -ARSIM_ERR_MISALIGNED_ADDRESS. */
static int run_group(group *g)
{
    const spv_program *p = g->p;
    const spv_func *f = &p->funcs[g->k->func];
    if (g->local_len)
        memset(g->local, 0, g->local_len);
    for (uint32_t i = 0; i < g->nitems; i++) {
        item *it = &g->items[i];
        it->regs = g->regs + (size_t)i * f->max_slots;
        it->priv = g->priv + (size_t)i * priv_stride(g->k, f);
        it->stack = g->frames + (size_t)i * f->max_depth;
        start_item(g, it);
    }
    for (;;) {
        uint32_t done = 0, at_barrier = 0;
        for (uint32_t i = 0; i < g->nitems; i++) {
            item *it = &g->items[i];
            if (it->state == S_RUN) {
                int r = spvx_run_item(g, it);
                if (r < 0)
                    return r;
                it->state = r == R_DONE ? S_DONE : r == R_BARRIER ? S_BARRIER : S_COLL;
            }
            done += it->state == S_DONE;
            at_barrier += it->state == S_BARRIER;
        }
        if (done == g->nitems)
            return 0;
        /* Sub-group collectives first: a sub-group may have to get through
         * one before it reaches the barrier or work-group collective the
         * others wait at. */
        int released = 0;
        for (uint32_t s = 0; s < subgroup_count(g); s++) {
            int r = subgroup_collective(g, s);
            if (r < 0)
                return r;
            released |= r;
        }
        if (released)
            continue;
        if (g->items[0].state == S_COLL) {
            if (workgroup_collective(g) < 0)
                return -1;
            continue;
        }
        if (at_barrier == g->nitems) {
            for (uint32_t i = 0; i < g->nitems; i++)
                g->items[i].state = S_RUN;
            continue;
        }
        return -1; /* barrier divergence: some finished or wait elsewhere */
    }
}

int spv_kernel_run(void *kernel_ctx, const ar_launch *l, void **params)
{
    const spv_kernel *k = kernel_ctx;
    const spv_program *p = k->prog;
    const spv_func *f = &p->funcs[k->func];
    group g;
    memset(&g, 0, sizeof g);
    g.p = p;
    g.k = k;
    g.l = l;
    g.ro = arsim_running_readonly();
    g.params = params;
    g.size[0] = l->block.x;
    g.size[1] = l->block.y;
    g.size[2] = l->block.z;
    g.nitems = l->block.x * l->block.y * l->block.z;
    g.items = calloc(g.nitems, sizeof *g.items);
    g.regs = calloc((size_t)g.nitems * f->max_slots, sizeof *g.regs);
    g.priv_total = (size_t)g.nitems * priv_stride(k, f);
    g.priv = calloc(1, g.priv_total ? g.priv_total : 1);
    g.frames = calloc((size_t)g.nitems * f->max_depth, sizeof *g.frames);
    g.local_len = spv_kernel_local_bytes(k, params);
    /* (More than SPV_MAX_LOCAL_BYTES: zeCommandListAppendLaunchKernel refuses it first.) */
    g.local_pad = g.local_len <= SPV_MAX_LOCAL_BYTES ? local_granted(g.local_len) : 0;
    /* calloc'd once: run_group clears local_len bytes, as nothing writes the slack. */
    g.local = g.local_len <= SPV_MAX_LOCAL_BYTES ? calloc(1, g.local_pad ? g.local_pad : 1) : NULL;
    int rc = 0;
    if (!g.items || !g.regs || !g.priv || !g.frames || !g.local) {
        rc = -1;
        goto out;
    }
    for (uint32_t i = 0; i < g.nitems; i++) {
        item *it = &g.items[i];
        it->linear = i;
        it->lid[0] = i % l->block.x;
        it->lid[1] = i / l->block.x % l->block.y;
        it->lid[2] = i / l->block.x / l->block.y;
    }
    for (uint64_t b = l->block_begin; b < l->block_end && rc == 0; b++) {
        g.gid[0] = (uint32_t)(b % l->grid.x);
        g.gid[1] = (uint32_t)(b / l->grid.x % l->grid.y);
        g.gid[2] = (uint32_t)(b / l->grid.x / l->grid.y);
        rc = run_group(&g);
    }
out:
    free(g.items);
    free(g.regs);
    free(g.priv);
    free(g.frames);
    free(g.local);
    if (rc == -ARSIM_ERR_ILLEGAL_ADDRESS || rc == -ARSIM_ERR_MISALIGNED_ADDRESS)
        return -rc;
    return rc == 0 ? 0 : -1;
}
