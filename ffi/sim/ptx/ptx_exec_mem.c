/* PTX loads, stores and atomics, for the interpreter.
 *
 * Every access is checked against its state space's window; global and
 * generic ones against the module's variables and the engine's live
 * allocations (arsim_check_access, which records the fault report).
 */
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_exec.h"


/* A global access: the module's own variables, else the engine's check
 * (which records the fault for arsim_fault_report).  Hits are cached per
 * block context: the allocations cannot change while a kernel runs. */
static int global_ok(block_ctx *b, uintptr_t p, size_t n, int wr)
{
    for (int i = 0; i < 8; i++)
        if (sim_inside(p, n, b->cache[i].lo, b->cache[i].hi))
            return 1;
    uintptr_t lo = 0, hi = 0;
    for (uint32_t i = 0; i < b->mod->nvars; i++) {
        uintptr_t vlo = (uintptr_t)b->mod->vars[i].data;
        if (p >= vlo && p < vlo + b->mod->vars[i].size) {
            lo = vlo;
            hi = vlo + b->mod->vars[i].size;
            break;
        }
    }
    if (!hi) {
        if (arsim_check_access((const void *)p, n, wr) != ARSIM_OK)
            return 0;
        arsim_alloc a;
        if (arsim_mem_lookup((const void *)p, &a) != ARSIM_OK)
            return 0;
        lo = (uintptr_t)a.base;
        hi = lo + a.size;
    }
    if (!sim_inside(p, n, lo, hi))
        return 0;
    b->cache[b->cache_next++ & 7] = (range){lo, hi};
    return 1;
}

/* A misaligned access: recorded (with its address where it is a global
 * one), and the block stops with CUDA_ERROR_MISALIGNED_ADDRESS. */
static uint8_t *misaligned(block_ctx *b, int space, uint64_t addr, size_t n, int wr)
{
    int global = space != S_SHARED && space != S_LOCAL && space != S_PARAM && space != S_FRAME;
    (void)arsim_fault_misaligned(global ? (const void *)(uintptr_t)addr : NULL, n, wr);
    b->misaligned = 1;
    return NULL;
}

/* The host address of an access of n bytes by lane l, or NULL (a fault). */
static inline uint8_t *mem_at(block_ctx *b, warp *w, frame *fr, int space, uint64_t addr,
                              size_t n, int l, int wr)
{
    if (n > 1 && (addr & (n - 1)) && (n & (n - 1)) == 0)
        return misaligned(b, space, addr, n, wr);
    switch (space) {
    case S_SHARED:
        return sim_inside(addr, n, 0, b->shared_size) ? b->shared + addr : NULL;
    case S_LOCAL:
        return sim_inside(addr, n, 0, b->stack) ? w->local + (size_t)l * b->stack + addr : NULL;
    case S_PARAM:
        return sim_inside(addr, n, 0, fr->f->param_bytes) ? b->params + addr : NULL;
    case S_FRAME:
        if (!sim_inside(addr, n, 0, fr->f->frame_bytes))
            return NULL;
        return fr->pf + (size_t)l * fr->f->frame_bytes + addr;
    case S_GENERIC: {
        uintptr_t p = (uintptr_t)addr;
        uintptr_t sh = (uintptr_t)b->shared, lb = (uintptr_t)w->local + (size_t)l * b->stack;
        uintptr_t pb = (uintptr_t)b->params;
        if (sim_inside(p, n, sh, sh + b->shared_size) || sim_inside(p, n, lb, lb + b->stack) ||
            (fr->f->is_entry && sim_inside(p, n, pb, pb + fr->f->param_bytes)))
            return (uint8_t *)p;
        return global_ok(b, p, n, wr) ? (uint8_t *)p : NULL;
    }
    default:
        return global_ok(b, (uintptr_t)addr, n, wr) ? (uint8_t *)(uintptr_t)addr : NULL;
    }
}

uint8_t *ptx_global_at(block_ctx *b, uint64_t addr, size_t n, int wr)
{
    return global_ok(b, (uintptr_t)addr, n, wr) ? (uint8_t *)(uintptr_t)addr : NULL;
}

int ptx_mem_read(block_ctx *b, warp *w, frame *fr, uint64_t addr, size_t n, int l, uint64_t *v)
{
    const uint8_t *p = mem_at(b, w, fr, S_GENERIC, addr, n, l, 0);
    if (!p)
        return E_FAULT;
    *v = sim_load_n(p, (uint32_t)n);
    return 0;
}

const uint8_t *ptx_mem_span(block_ctx *b, warp *w, frame *fr, uint64_t addr, int l,
                            size_t *avail)
{
    uintptr_t p = (uintptr_t)addr, hi = 0;
    uintptr_t sh = (uintptr_t)b->shared, lb = (uintptr_t)w->local + (size_t)l * b->stack;
    uintptr_t pb = (uintptr_t)b->params;
    arsim_alloc a;
    if (sim_inside(p, 1, sh, sh + b->shared_size))
        hi = sh + b->shared_size;
    else if (b->stack && sim_inside(p, 1, lb, lb + b->stack))
        hi = lb + b->stack;
    else if (sim_inside(p, 1, pb, pb + b->entry->param_bytes))
        hi = pb + b->entry->param_bytes;
    else if (arsim_mem_lookup((const void *)p, &a) == ARSIM_OK)
        hi = (uintptr_t)a.base + a.size;
    if (!hi)
        return NULL;
    *avail = hi - p;
    return (const uint8_t *)p;
}

/* A value of type t from memory, sign-extended for the signed types. */
static inline uint64_t load_bytes(const uint8_t *p, int t)
{
    uint32_t size = (uint32_t)ptx_type_size(t);
    uint64_t v = sim_load_n(p, size);
    return is_signed(t) ? (uint64_t)sim_sext(v, size * 8) : v;
}

static inline void store_bytes(uint8_t *p, int t, uint64_t v)
{
    sim_store_n(p, (uint32_t)ptx_type_size(t), v);
}

static uint64_t atomic_op(uint8_t *p, int t, int op, uint64_t b, uint64_t c)
{
    int sz = ptx_type_size(t);
    if (sz == 4) {
        uint32_t *q = (uint32_t *)p, v = (uint32_t)b;
        switch (op) {
        case ATOM_ADD:
            if (t == T_F32) {
                uint32_t old = __atomic_load_n(q, __ATOMIC_RELAXED), nw;
                do {
                    nw = (uint32_t)sim_f32_bits(sim_f32(old) + sim_f32(v));
                } while (!__atomic_compare_exchange_n(q, &old, nw, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
                return old;
            }
            return __atomic_fetch_add(q, v, __ATOMIC_SEQ_CST);
        case ATOM_EXCH: return __atomic_exchange_n(q, v, __ATOMIC_SEQ_CST);
        case ATOM_CAS: {
            uint32_t exp = v;
            __atomic_compare_exchange_n(q, &exp, (uint32_t)c, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return exp;
        }
        case ATOM_AND: return __atomic_fetch_and(q, v, __ATOMIC_SEQ_CST);
        case ATOM_OR: return __atomic_fetch_or(q, v, __ATOMIC_SEQ_CST);
        case ATOM_XOR: return __atomic_fetch_xor(q, v, __ATOMIC_SEQ_CST);
        default: {
            uint32_t old = __atomic_load_n(q, __ATOMIC_RELAXED), nw;
            do {
                switch (op) {
                case ATOM_MIN: nw = is_signed(t) ? ((int32_t)old < (int32_t)v ? old : v) : (old < v ? old : v); break;
                case ATOM_MAX: nw = is_signed(t) ? ((int32_t)old > (int32_t)v ? old : v) : (old > v ? old : v); break;
                case ATOM_INC: nw = old >= v ? 0 : old + 1; break;
                default: nw = (old == 0 || old > v) ? v : old - 1; break; /* dec */
                }
            } while (!__atomic_compare_exchange_n(q, &old, nw, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
            return old;
        }
        }
    }
    uint64_t *q = (uint64_t *)p, v = b;
    switch (op) {
    case ATOM_ADD:
        if (t == T_F64) {
            uint64_t old = __atomic_load_n(q, __ATOMIC_RELAXED), nw;
            do {
                nw = sim_f64_bits(sim_f64(old) + sim_f64(v));
            } while (!__atomic_compare_exchange_n(q, &old, nw, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
            return old;
        }
        return __atomic_fetch_add(q, v, __ATOMIC_SEQ_CST);
    case ATOM_EXCH: return __atomic_exchange_n(q, v, __ATOMIC_SEQ_CST);
    case ATOM_CAS: {
        uint64_t exp = v;
        __atomic_compare_exchange_n(q, &exp, c, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return exp;
    }
    case ATOM_AND: return __atomic_fetch_and(q, v, __ATOMIC_SEQ_CST);
    case ATOM_OR: return __atomic_fetch_or(q, v, __ATOMIC_SEQ_CST);
    case ATOM_XOR: return __atomic_fetch_xor(q, v, __ATOMIC_SEQ_CST);
    default: {
        uint64_t old = __atomic_load_n(q, __ATOMIC_RELAXED), nw;
        do {
            switch (op) {
            case ATOM_MIN: nw = is_signed(t) ? ((int64_t)old < (int64_t)v ? old : v) : (old < v ? old : v); break;
            case ATOM_MAX: nw = is_signed(t) ? ((int64_t)old > (int64_t)v ? old : v) : (old > v ? old : v); break;
            case ATOM_INC: nw = old >= v ? 0 : old + 1; break;
            default: nw = (old == 0 || old > v) ? v : old - 1; break;
            }
        } while (!__atomic_compare_exchange_n(q, &old, nw, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
        return old;
    }
    }
}

/* 1 if every lane's access [A+imm, A+imm+n) lies, aligned, inside one
 * cached global range: the per-lane checks can then be skipped. */
static int warp_in_one_range(block_ctx *b, const uint64_t *A, int64_t imm, size_t n, uint32_t m)
{
    uint64_t lo = UINT64_MAX, hi = 0, bits = 0;
    FOR_LANES(m, {
        uint64_t a = A[l] + (uint64_t)imm;
        lo = a < lo ? a : lo;
        hi = a > hi ? a : hi;
        bits |= a;
    });
    if ((n & (n - 1)) == 0 && (bits & (n - 1)))
        return 0;
    for (int i = 0; i < 8; i++)
        if (sim_inside(lo, 0, b->cache[i].lo, b->cache[i].hi) &&
            sim_inside(hi, n, b->cache[i].lo, b->cache[i].hi))
            return 1;
    return 0;
}

/* isspacep: a generic address is in shared memory or a lane's stack when it
 * lies in that window, in .param when in the kernel's parameters, in .const
 * when in one of the module's .const variables; every other address is in
 * the global window (the PTX ISA: global includes the kernel's parameters). */
static int in_space(block_ctx *b, warp *w, int space, uintptr_t p, int l)
{
    uintptr_t sh = (uintptr_t)b->shared, lb = (uintptr_t)w->local + (size_t)l * b->stack;
    uintptr_t pb = (uintptr_t)b->params;
    int shared = sim_inside(p, 1, sh, sh + b->shared_size);
    int local = b->stack && sim_inside(p, 1, lb, lb + b->stack);
    switch (space) {
    case S_SHARED: return shared;
    case S_LOCAL: return local;
    case S_PARAM: return sim_inside(p, 1, pb, pb + b->entry->param_bytes);
    case S_CONST:
        for (uint32_t i = 0; i < b->mod->nvars; i++) {
            uintptr_t lo = (uintptr_t)b->mod->vars[i].data;
            if (b->mod->vars[i].is_const && sim_inside(p, 1, lo, lo + b->mod->vars[i].size))
                return 1;
        }
        return 0;
    default: return !shared && !local;
    }
}

int ptx_exec_mem(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    lanes_t *R = fr->R;
    const uint64_t *A = R[in->a];
    if (in->op == OP_ISSPACEP) {
        uint64_t *D = R[in->d];
        FOR_LANES(m, D[l] = (uint64_t)in_space(b, w, in->space, (uintptr_t)A[l], l));
        return 0;
    }
    int t = in->type, es = ptx_type_size(t);
    size_t n = (size_t)es * in->vec;
    /* Stores of a launch with read-only ranges take the checked path. */
    if ((in->op == OP_LD || (in->op == OP_ST && !b->ro)) && in->vec == 1 &&
        (in->space == S_GLOBAL || in->space == S_GENERIC || in->space == S_CONST) &&
        warp_in_one_range(b, A, in->imm, n, m)) {
        int64_t imm = in->imm;
        if (in->op == OP_LD) {
            uint64_t *D = R[in->d];
            if (t == T_F32 || t == T_U32 || t == T_B32)
                FOR_LANES(m, { uint32_t v; memcpy(&v, (const void *)(uintptr_t)(A[l] + (uint64_t)imm), 4); D[l] = v; });
            else
                FOR_LANES(m, D[l] = load_bytes((const uint8_t *)(uintptr_t)(A[l] + (uint64_t)imm), t));
        } else {
            const uint64_t *B = R[in->b];
            if (t == T_F32 || t == T_U32 || t == T_B32 || t == T_S32)
                FOR_LANES(m, { uint32_t v = (uint32_t)B[l]; memcpy((void *)(uintptr_t)(A[l] + (uint64_t)imm), &v, 4); });
            else
                FOR_LANES(m, store_bytes((uint8_t *)(uintptr_t)(A[l] + (uint64_t)imm), t, B[l]));
        }
        return 0;
    }
    switch (in->op) {
    case OP_LD:
        if (in->vec == 1) {
            uint64_t *D = R[in->d];
            FOR_LANES(m, {
                uint8_t *p = mem_at(b, w, fr, in->space, A[l] + (uint64_t)in->imm, n, l, 0);
                if (!p)
                    return E_FAULT;
                D[l] = load_bytes(p, t);
            });
        } else {
            FOR_LANES(m, {
                uint8_t *p = mem_at(b, w, fr, in->space, A[l] + (uint64_t)in->imm, n, l, 0);
                if (!p)
                    return E_FAULT;
                for (int k = 0; k < in->vec; k++)
                    R[in->v[k]][l] = load_bytes(p + k * es, t);
            });
        }
        return 0;
    case OP_ST:
        FOR_LANES(m, {
            uint8_t *p = mem_at(b, w, fr, in->space, A[l] + (uint64_t)in->imm, n, l, 1);
            if (!p || arsim_readonly_hit(b->ro, (uintptr_t)p, n))
                return E_FAULT;
            if (in->vec == 1)
                store_bytes(p, t, R[in->b][l]);
            else
                for (int k = 0; k < in->vec; k++)
                    store_bytes(p + k * es, t, R[in->v[k]][l]);
        });
        return 0;
    default: { /* atom, red */
        if (in->space != S_GLOBAL && in->space != S_SHARED && in->space != S_GENERIC)
            return E_FAIL;
        const uint64_t *B = R[in->b], *C = in->c != PTX_NONE ? R[in->c] : NULL;
        FOR_LANES(m, {
            uint8_t *p = mem_at(b, w, fr, in->space, A[l] + (uint64_t)in->imm, n, l, 1);
            if (!p || arsim_readonly_hit(b->ro, (uintptr_t)p, n))
                return E_FAULT;
            uint64_t old = atomic_op(p, t, in->mode, B[l], C ? C[l] : 0);
            if (in->op == OP_ATOM)
                R[in->d][l] = is_signed(t) ? old & sim_mask(es * 8) : old;
        });
        return 0;
    }
    }
}
