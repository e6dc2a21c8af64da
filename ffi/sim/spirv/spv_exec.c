/* SPIR-V interpreter: runs one work-item of the compiled form of
 * spv_internal.h until it finishes, faults, or reaches a barrier or a
 * collective (spv_group.c runs the work-group around it).  Its state (pc,
 * frames) is explicit, so it resumes where it stopped.  Every load, store,
 * copy and atomic is checked against the work-item's private memory, the
 * group's local memory, the program's variables and the device's
 * allocations: anything else is an illegal address, which poisons the device
 * as on hardware, except a load from the local memory's slack (the bytes a
 * GPU's allocation step adds after it: local_slack_load). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../engine.h"
#include "spv_exec.h"

/* --------------------------------------------------------------- memory */

static int addr_slow(group *g, uintptr_t a, uint64_t n)
{
    arsim_alloc al;
    if (arsim_mem_lookup((const void *)a, &al) != ARSIM_OK ||
        n > (uintptr_t)al.base + al.size - a) {
        (void)arsim_check_access((const void *)a, n, -1); /* records the fault report */
        return 0;
    }
    uintptr_t lo = (uintptr_t)al.base, hi = lo + al.size;
    g->cache[g->next_cache] = (range){lo, hi};
    g->next_cache = (g->next_cache + 1) % CACHE_RANGES;
    if (g->ncache < CACHE_RANGES)
        g->ncache++;
    return 1;
}

/* A load of n bytes at byte off of the group's local memory that ends in its
 * slack (past local_len, within local_pad): a GPU reads whatever its shared
 * local memory holds there, the sim reads the slack's zeros.  Said on stderr
 * once per kernel; not a fault, so not in arsim_fault_report. */
static __attribute__((cold, noinline)) int local_slack_load(group *g, uint64_t off, uint64_t n)
{
    spv_kernel *k = (spv_kernel *)g->k; /* the program's kernels: writable memory */
    if (!__atomic_exchange_n(&k->slack_reported, 1, __ATOMIC_RELAXED))
        fprintf(stderr,
                "levelzero-sim: kernel %s: a load of %llu bytes at byte %llu of the work-group's "
                "local memory reads past its end (%zu bytes: the kernel's __local variables and "
                "arguments); a GPU gives the work-group %zu bytes of shared local memory and "
                "reads whatever is left there, the sim reads zeros (said once per kernel; "
                "ARUNTIME_SIM_SANITIZE=1 makes it a fault)\n",
                k->name, (unsigned long long)n, (unsigned long long)off, g->local_len,
                g->local_pad);
    return 1;
}

/* 1 if [a, a+n) is memory a kernel may touch; a load (load = 1) also the
 * local memory's slack. */
static inline int addr_ok(group *g, uintptr_t a, uint64_t n, int load)
{
    uintptr_t pv = (uintptr_t)g->priv;
    if (a >= pv && a - pv <= g->priv_total && n <= g->priv_total - (a - pv))
        return 1;
    uintptr_t lc = (uintptr_t)g->local;
    if (a >= lc && a - lc <= g->local_len && n <= g->local_len - (a - lc))
        return 1;
    for (unsigned i = 0; i < g->ncache; i++)
        if (a >= g->cache[i].lo && a < g->cache[i].hi && n <= g->cache[i].hi - a)
            return 1;
    uintptr_t gl = (uintptr_t)g->p->globals;
    if (a >= gl && a - gl <= g->p->globals_size && n <= g->p->globals_size - (a - gl))
        return 1;
    if (load && a >= lc && a - lc < g->local_pad && n <= g->local_pad - (a - lc))
        return local_slack_load(g, a - lc, n);
    return a != 0 && addr_slow(g, a, n);
}

/* --------------------------------------------------------------- builtins */

static void builtin(const group *g, const item *it, uint32_t which, uint64_t *out, uint32_t n)
{
    const ar_launch *l = g->l;
    uint64_t v[3] = {0, 0, 0};
    uint32_t sg = it->linear / SPV_SUBGROUP_SIZE;
    switch (which) {
    case B_GLOBAL_ID:
        for (int i = 0; i < 3; i++) v[i] = (uint64_t)g->gid[i] * g->size[i] + it->lid[i];
        break;
    case B_LOCAL_ID: for (int i = 0; i < 3; i++) v[i] = it->lid[i]; break;
    case B_GROUP_ID: for (int i = 0; i < 3; i++) v[i] = g->gid[i]; break;
    case B_GROUP_SIZE: case B_ENQUEUED_GROUP_SIZE:
        for (int i = 0; i < 3; i++) v[i] = g->size[i];
        break;
    case B_NUM_GROUPS: v[0] = l->grid.x; v[1] = l->grid.y; v[2] = l->grid.z; break;
    case B_GLOBAL_SIZE:
        v[0] = (uint64_t)l->grid.x * l->block.x;
        v[1] = (uint64_t)l->grid.y * l->block.y;
        v[2] = (uint64_t)l->grid.z * l->block.z;
        break;
    case B_GLOBAL_OFFSET: break;
    case B_GLOBAL_LINEAR_ID: {
        uint64_t gx = (uint64_t)l->grid.x * l->block.x, gy = (uint64_t)l->grid.y * l->block.y;
        uint64_t x = (uint64_t)g->gid[0] * g->size[0] + it->lid[0];
        uint64_t y = (uint64_t)g->gid[1] * g->size[1] + it->lid[1];
        uint64_t z = (uint64_t)g->gid[2] * g->size[2] + it->lid[2];
        v[0] = x + gx * (y + gy * z);
        break;
    }
    case B_LOCAL_INDEX: v[0] = it->linear; break;
    case B_WORK_DIM:
        v[0] = (uint64_t)l->grid.z * l->block.z > 1 ? 3 : (uint64_t)l->grid.y * l->block.y > 1 ? 2 : 1;
        break;
    case B_SUBGROUP_SIZE: {
        uint32_t left = g->nitems - sg * SPV_SUBGROUP_SIZE;
        v[0] = left < SPV_SUBGROUP_SIZE ? left : SPV_SUBGROUP_SIZE;
        break;
    }
    case B_SUBGROUP_MAX_SIZE: v[0] = SPV_SUBGROUP_SIZE; break;
    case B_NUM_SUBGROUPS: v[0] = subgroup_count(g); break;
    case B_SUBGROUP_ID: v[0] = sg; break;
    case B_SUBGROUP_LOCAL_ID: v[0] = it->linear % SPV_SUBGROUP_SIZE; break;
    default: break;
    }
    for (uint32_t i = 0; i < n && i < 3; i++)
        out[i] = v[i];
}

/* ------------------------------------------------------------ interpreter */

void spvx_enter(const group *g, const spv_func *f, uint64_t *regs, uint8_t *priv)
{
    const spv_program *p = g->p;
    if (f->nconst)
        memcpy(regs + f->const_base, p->pool + f->templ, f->nconst * sizeof *regs);
    for (uint32_t i = 0; i < f->nfix; i++) {
        const spv_fixup *x = &p->fixups[f->fix + i];
        regs[x->slot] = (uint64_t)(uintptr_t)((x->kind ? g->local : priv) + x->off);
    }
}

#define R_(s) regs[(s)]
#define A_ R_(I->a)
#define B_ R_(I->b)

/* The operations that take more than an expression, each kept out of the
 * interpreter's one switch so that the switch stays one jump per instruction. */

static inline uint64_t sdiv(uint64_t ua, uint64_t ub, uint32_t w)
{
    int64_t a = sim_sext(ua, w), b = sim_sext(ub, w);
    return (b == 0 ? 0 : (b == -1 ? (uint64_t)0 - (uint64_t)a : (uint64_t)(a / b))) & sim_mask(w);
}

/* OpSRem (the sign of a) or OpSMod (the sign of b). */
static inline uint64_t srem(uint64_t ua, uint64_t ub, uint32_t w, int smod)
{
    int64_t a = sim_sext(ua, w), b = sim_sext(ub, w);
    int64_t r = (b == 0 || b == -1) ? 0 : a % b;
    if (smod && r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return (uint64_t)r & sim_mask(w);
}

static inline uint64_t fmod32(uint64_t ua, uint64_t ub)
{
    float b = sim_f32(ub), r = fmodf(sim_f32(ua), b);
    if (r != 0 && signbit(r) != signbit(b))
        r += b;
    return sim_f32_bits(r);
}

/* Half arithmetic: the exact double of each operand, one double operation
 * (exact for +, -, *; for / a double rounding that is innocuous, as 53 >=
 * 2 * 11 + 2), then one rounding to half, to nearest even. */
static inline double hv(uint64_t v) { return (double)spv_half_value((uint16_t)v); }

static inline uint64_t half_of(double v) { return spvx_double_to_half(v); }

static inline uint64_t fmod16(uint64_t ua, uint64_t ub)
{
    double b = hv(ub), r = fmod(hv(ua), b);
    if (r != 0 && signbit(r) != signbit(b))
        r += b; /* exact in double: both have 11 significant bits within 2^-24..2^16 */
    return half_of(r);
}

static inline uint64_t fmod64(uint64_t ua, uint64_t ub)
{
    double b = sim_f64(ub), r = fmod(sim_f64(ua), b);
    if (r != 0 && signbit(r) != signbit(b))
        r += b;
    return sim_f64_bits(r);
}

/* Saturating integer conversions: from a c-bit value to the destination's
 * range (m: its mask; w: its width).  SaturatedConversion on OpUConvert and
 * OpSConvert keeps the signedness (e = 1); OpSatConvertSToU and
 * OpSatConvertUToS change it (e = 2). */
static inline uint64_t usat(uint64_t v, uint32_t c, uint64_t m, uint32_t e)
{
    if (e == 2 && sim_sext(v, c) < 0)
        return 0; /* a negative signed source */
    v &= c >= 64 ? ~0ull : (1ull << c) - 1;
    return v > m ? m : v;
}

static inline uint64_t ssat(uint64_t v, uint32_t c, uint32_t w, uint32_t e)
{
    int64_t hi = w >= 64 ? INT64_MAX : (int64_t)((1ull << (w - 1)) - 1);
    uint64_t mask = w >= 64 ? ~0ull : (1ull << w) - 1;
    if (e == 2) { /* an unsigned source */
        v &= c >= 64 ? ~0ull : (1ull << c) - 1;
        return v > (uint64_t)hi ? (uint64_t)hi : v;
    }
    int64_t x = sim_sext(v, c), lo = -hi - 1;
    x = x > hi ? hi : x < lo ? lo : x;
    return (uint64_t)x & mask;
}

static inline void exec_builtin(const group *g, const item *it, const spv_ins *I, uint64_t *regs)
{
    uint64_t v[3];
    builtin(g, it, I->c, v, I->n);
    for (uint32_t k = 0; k < I->n && k < 3; k++)
        R_(I->d + k) = v[k] & sim_mask(I->w);
}

static inline void exec_ext(const spv_ins *I, uint64_t *regs)
{
    uint64_t b = I->b == SPV_NONE ? 0 : B_, c = I->e == SPV_NONE ? 0 : R_(I->e);
    R_(I->d) = I->c >= SPV_CL_s_abs ? spvx_ext_int(I->c, I->w, A_, b, c)
                           : spvx_ext_float(I->c, I->w, A_, b, c);
}

/* Loads, stores, copies and atomics: 0, or -ARSIM_ERR_ILLEGAL_ADDRESS for an
 * address no kernel may touch, or -ARSIM_ERR_MISALIGNED_ADDRESS for one not
 * aligned to the element's size (as a GPU refuses it). */

/* 1 if a is in the work-item's private or the group's local memory. */
static int private_or_local(const group *g, uintptr_t a)
{
    uintptr_t pv = (uintptr_t)g->priv, lc = (uintptr_t)g->local;
    return (a >= pv && a - pv < g->priv_total) || (a >= lc && a - lc < g->local_pad);
}

/* A misaligned access by insn: recorded with its address where that is device
 * memory (private and local addresses are the sim's own), as cuda-sim does. */
static int misaligned(const group *g, uintptr_t a, uint64_t n, int wr, const char *insn)
{
    const void *at = private_or_local(g, a) ? NULL : (const void *)a;
    return -(int)arsim_fault_misaligned_by(at, n, wr, insn);
}

/* The alignment X_LOAD and X_STORE need: the element's size, or less where
 * an Aligned memory operand says so. */
static inline uint32_t need_align(const spv_ins *I) { return I->c ? I->c : I->w; }

static inline int exec_load(group *g, const spv_ins *I, uint64_t *regs)
{
    uintptr_t a = (uintptr_t)A_;
    if (a & (need_align(I) - 1))
        return misaligned(g, a, I->w, 0, I->e ? "vloadn" : "OpLoad");
    if (!addr_ok(g, a, (uint64_t)I->w * I->n, 1))
        return -ARSIM_ERR_ILLEGAL_ADDRESS;
    for (uint32_t k = 0; k < I->n; k++)
        R_(I->d + k) = sim_load_n((const void *)(a + k * I->w), I->w);
    return 0;
}

static inline int exec_store(group *g, const spv_ins *I, uint64_t *regs)
{
    uintptr_t a = (uintptr_t)A_;
    if (a & (need_align(I) - 1))
        return misaligned(g, a, I->w, 1, I->e ? "vstoren" : "OpStore");
    if (!addr_ok(g, a, (uint64_t)I->w * I->n, 0) ||
        arsim_readonly_hit(g->ro, a, (uint64_t)I->w * I->n))
        return -ARSIM_ERR_ILLEGAL_ADDRESS;
    for (uint32_t k = 0; k < I->n; k++)
        sim_store_n((void *)(a + k * I->w), I->w, R_(I->b + k));
    return 0;
}

static inline int exec_half(group *g, const spv_ins *I, uint64_t *regs)
{
    uintptr_t a = (uintptr_t)A_;
    int load = I->op == X_LOADH;
    if (a % 2)
        return misaligned(g, a, 2, !load, load ? "vload_half" : "vstore_half");
    if (!addr_ok(g, a, 2, load) || (!load && arsim_readonly_hit(g->ro, a, 2)))
        return -ARSIM_ERR_ILLEGAL_ADDRESS;
    if (I->op == X_LOADH) {
        float f = spv_half_value((uint16_t)sim_load_n((const void *)a, 2));
        R_(I->d) = I->w == 64 ? sim_f64_bits((double)f) : sim_f32_bits(f);
    } else {
        double v = fval(B_, I->w);
        sim_store_n((void *)a, 2,
                I->w == 64 ? spvx_double_to_half(v) : spvx_double_to_half((double)(float)v));
    }
    return 0;
}

static inline int exec_memcpy(group *g, const spv_ins *I, uint64_t *regs)
{
    uint64_t n = I->c == SPV_NONE ? I->e : R_(I->c) & sim_mask(I->w);
    uintptr_t d = (uintptr_t)A_, s = (uintptr_t)B_;
    if (n && (!addr_ok(g, d, n, 0) || !addr_ok(g, s, n, 0) || arsim_readonly_hit(g->ro, d, n)))
        return -ARSIM_ERR_ILLEGAL_ADDRESS;
    if (n)
        memmove((void *)d, (const void *)s, n);
    return 0;
}

/* The SPIR-V instruction of each atomic kind (A_*), for a fault report. */
static const char *const atomic_names[] = {
    [A_LOAD] = "OpAtomicLoad", [A_STORE] = "OpAtomicStore", [A_XCHG] = "OpAtomicExchange",
    [A_CMPXCHG] = "OpAtomicCompareExchange", [A_INC] = "OpAtomicIIncrement",
    [A_DEC] = "OpAtomicIDecrement", [A_ADD] = "OpAtomicIAdd", [A_SUB] = "OpAtomicISub",
    [A_SMIN] = "OpAtomicSMin", [A_UMIN] = "OpAtomicUMin", [A_SMAX] = "OpAtomicSMax",
    [A_UMAX] = "OpAtomicUMax", [A_AND] = "OpAtomicAnd", [A_OR] = "OpAtomicOr",
    [A_XOR] = "OpAtomicXor", [A_FADD] = "OpAtomicFAddEXT", [A_FMIN] = "OpAtomicFMinEXT",
    [A_FMAX] = "OpAtomicFMaxEXT",
};

static inline int exec_atomic(group *g, const spv_ins *I, uint64_t *regs)
{
    uintptr_t a = (uintptr_t)A_;
    uint32_t bytes = I->w / 8u;
    if (a % bytes)
        return misaligned(g, a, bytes, I->c == A_LOAD ? 0 : 1, atomic_names[I->c]);
    if (!addr_ok(g, a, bytes, 0) || (I->c != A_LOAD && arsim_readonly_hit(g->ro, a, bytes)))
        return -ARSIM_ERR_ILLEGAL_ADDRESS;
    uint64_t v = I->b == SPV_NONE ? 0 : B_;
    uint64_t c = I->e == SPV_NONE ? 0 : R_(I->e);
    uint64_t r = spvx_atomic((void *)a, I->w, I->c, v, c);
    if (I->d != SPV_NONE)
        R_(I->d) = r & sim_mask(I->w);
    return 0;
}

/* Control. */

static inline uint32_t exec_switch(const spv_program *p, const spv_ins *I, uint64_t *regs)
{
    uint64_t v = A_;
    const uint32_t *t = p->aux + I->b;
    uint32_t n = t[0];
    for (uint32_t k = 0; k < n; k++) {
        uint64_t lit = t[2 + 3 * k] | (uint64_t)t[3 + 3 * k] << 32;
        if (lit == v)
            return t[4 + 3 * k];
    }
    return t[1];
}

/* Calls I from pc: the callee's frame becomes the work-item's; returns its regs. */
static uint64_t *exec_call(group *g, item *it, const spv_ins *I, uint64_t *regs, uint32_t pc)
{
    const spv_program *p = g->p;
    const spv_func *cur = &p->funcs[it->func];
    const spv_func *f = &p->funcs[I->a];
    uint64_t *nregs = regs + cur->nslots;
    uint8_t *npriv = it->priv + ((cur->priv_bytes + 15u) & ~15u);
    const uint32_t *args = p->aux + I->b;
    uint32_t to = 0;
    for (uint32_t i = 0; i < I->n; i++) {
        uint32_t s = args[2 * i], cn = args[2 * i + 1];
        for (uint32_t k = 0; k < cn; k++)
            nregs[to++] = R_(s + k);
    }
    it->stack[it->depth++] = (frame){pc, it->func, regs, it->priv};
    spvx_enter(g, f, nregs, npriv);
    it->priv = npriv;
    it->func = I->a;
    return nregs;
}

/* Returns from a call (depth > 0) with I's value: the caller's frame comes
 * back; returns its regs and sets *pc past the call. */
static uint64_t *exec_return(group *g, item *it, const spv_ins *I, uint64_t *regs, uint32_t *pc)
{
    frame *fr = &it->stack[--it->depth];
    const spv_ins *call = &g->p->code[fr->ret_pc - 1];
    for (uint32_t k = 0; k < I->n; k++)
        fr->regs[call->d + k] = R_(I->a + k);
    *pc = fr->ret_pc;
    it->func = fr->func;
    it->priv = fr->priv;
    return fr->regs;
}

/* Stops the work-item at pc with status rc (it resumes at pc). */
static inline int stop(item *it, uint32_t pc, uint64_t *regs, int rc)
{
    it->pc = pc;
    it->regs = regs;
    return rc;
}

int spvx_run_item(group *g, item *it)
{
    const spv_program *p = g->p;
    const spv_ins *code = p->code;
    uint32_t pc = it->pc;
    uint64_t *regs = it->regs;
    int rc;
    for (;;) {
        const spv_ins *I = &code[pc++];
        const uint64_t m = sim_mask(I->w);
        switch (I->op) {
        case X_MOV:
            for (uint32_t k = 0; k < I->n; k++)
                R_(I->d + k) = R_(I->a + k);
            break;
        case X_BUILTIN: exec_builtin(g, it, I, regs); break;
        case X_VEXTRACT: R_(I->d) = (B_ & m) < I->n ? R_(I->a + (B_ & m)) : 0; break;
        case X_VINSERT: if ((B_ & m) < I->n) R_(I->d + (B_ & m)) = A_; break;
        case X_SELECT: R_(I->d) = R_(I->e) ? A_ : B_; break;
        case X_IADD: R_(I->d) = (A_ + B_) & m; break;
        case X_ISUB: R_(I->d) = (A_ - B_) & m; break;
        case X_IMUL: R_(I->d) = (A_ * B_) & m; break;
        case X_UDIV: R_(I->d) = B_ ? A_ / B_ : 0; break; /* division by zero is undefined: 0 */
        case X_SDIV: R_(I->d) = sdiv(A_, B_, I->w); break;
        case X_UMOD: R_(I->d) = B_ ? A_ % B_ : 0; break;
        case X_SREM: R_(I->d) = srem(A_, B_, I->w, 0); break;
        case X_SMOD: R_(I->d) = srem(A_, B_, I->w, 1); break;
        case X_SHL: R_(I->d) = (A_ << (B_ & (I->w - 1u))) & m; break;
        case X_SHRL: R_(I->d) = A_ >> (B_ & (I->w - 1u)); break;
        case X_SHRA: R_(I->d) = (uint64_t)(sim_sext(A_, I->w) >> (B_ & (I->w - 1u))) & m; break;
        case X_OR: R_(I->d) = A_ | B_; break;
        case X_XOR: R_(I->d) = A_ ^ B_; break;
        case X_AND: R_(I->d) = A_ & B_; break;
        case X_NOT: R_(I->d) = ~A_ & m; break;
        case X_SNEG: R_(I->d) = (0 - A_) & m; break;
        case X_IEQ: case X_LEQ: R_(I->d) = A_ == B_; break;
        case X_INE: case X_LNE: R_(I->d) = A_ != B_; break;
        case X_UGT: R_(I->d) = A_ > B_; break;
        case X_UGE: R_(I->d) = A_ >= B_; break;
        case X_ULT: R_(I->d) = A_ < B_; break;
        case X_ULE: R_(I->d) = A_ <= B_; break;
        case X_SGT: R_(I->d) = sim_sext(A_, I->w) > sim_sext(B_, I->w); break;
        case X_SGE: R_(I->d) = sim_sext(A_, I->w) >= sim_sext(B_, I->w); break;
        case X_SLT: R_(I->d) = sim_sext(A_, I->w) < sim_sext(B_, I->w); break;
        case X_SLE: R_(I->d) = sim_sext(A_, I->w) <= sim_sext(B_, I->w); break;
        case X_LAND: R_(I->d) = A_ && B_; break;
        case X_LOR: R_(I->d) = A_ || B_; break;
        case X_LNOT: R_(I->d) = !A_; break;
        case X_FADD16: R_(I->d) = half_of(hv(A_) + hv(B_)); break;
        case X_FSUB16: R_(I->d) = half_of(hv(A_) - hv(B_)); break;
        case X_FMUL16: R_(I->d) = half_of(hv(A_) * hv(B_)); break;
        case X_FDIV16: R_(I->d) = half_of(hv(A_) / hv(B_)); break;
        case X_FREM16: R_(I->d) = half_of(fmod(hv(A_), hv(B_))); break;
        case X_FMOD16: R_(I->d) = fmod16(A_, B_); break;
        case X_FNEG16: R_(I->d) = A_ ^ 0x8000u; break;
        case X_FADD32: R_(I->d) = sim_f32_bits(sim_f32(A_) + sim_f32(B_)); break;
        case X_FSUB32: R_(I->d) = sim_f32_bits(sim_f32(A_) - sim_f32(B_)); break;
        case X_FMUL32: R_(I->d) = sim_f32_bits(sim_f32(A_) * sim_f32(B_)); break;
        case X_FDIV32: R_(I->d) = sim_f32_bits(sim_f32(A_) / sim_f32(B_)); break;
        case X_FREM32: R_(I->d) = sim_f32_bits(fmodf(sim_f32(A_), sim_f32(B_))); break;
        case X_FMOD32: R_(I->d) = fmod32(A_, B_); break;
        case X_FNEG32: R_(I->d) = A_ ^ 0x80000000u; break;
        case X_FADD64: R_(I->d) = sim_f64_bits(sim_f64(A_) + sim_f64(B_)); break;
        case X_FSUB64: R_(I->d) = sim_f64_bits(sim_f64(A_) - sim_f64(B_)); break;
        case X_FMUL64: R_(I->d) = sim_f64_bits(sim_f64(A_) * sim_f64(B_)); break;
        case X_FDIV64: R_(I->d) = sim_f64_bits(sim_f64(A_) / sim_f64(B_)); break;
        case X_FREM64: R_(I->d) = sim_f64_bits(fmod(sim_f64(A_), sim_f64(B_))); break;
        case X_FMOD64: R_(I->d) = fmod64(A_, B_); break;
        case X_FNEG64: R_(I->d) = A_ ^ 0x8000000000000000ull; break;
        case X_FCMP: R_(I->d) = (uint64_t)spvx_fcmp(I->c, fval(A_, I->w), fval(B_, I->w)); break;
        case X_FCLASS: R_(I->d) = spvx_fclass(I->c, A_, I->w); break;
        case X_UCONV: R_(I->d) = I->e ? usat(A_, I->c, m, I->e) : A_ & m; break;
        case X_SCONV: R_(I->d) = I->e ? ssat(A_, I->c, I->w, I->e) : (uint64_t)sim_sext(A_, I->c) & m; break;
        case X_FTOU: case X_FTOS:
            R_(I->d) = spvx_ftoi(fval(A_, I->c), I->w, I->op == X_FTOS, I->e & 0xFFu);
            break;
        case X_UTOF: R_(I->d) = spvx_itof(A_, I->c, 0, I->w, I->e); break;
        case X_STOF: R_(I->d) = spvx_itof(A_, I->c, 1, I->w, I->e); break;
        case X_FCONV: R_(I->d) = spvx_fconv(A_, I->c, I->w, I->e); break;
        case X_LOAD:
            if ((rc = exec_load(g, I, regs)) != 0)
                return stop(it, pc - 1, it->regs, rc);
            break;
        case X_STORE:
            if ((rc = exec_store(g, I, regs)) != 0)
                return stop(it, pc - 1, it->regs, rc);
            break;
        case X_LOADH: case X_STOREH:
            if ((rc = exec_half(g, I, regs)) != 0)
                return stop(it, pc - 1, it->regs, rc);
            break;
        case X_MEMCPY: if ((rc = exec_memcpy(g, I, regs)) != 0) return rc; break;
        case X_ATOMIC: if ((rc = exec_atomic(g, I, regs)) != 0) return rc; break;
        case X_PTRADD:
            R_(I->d) = A_ + (uint64_t)sim_sext(B_, I->w) * I->c + (uint64_t)(int64_t)(int32_t)I->e;
            break;
        case X_ADDI: R_(I->d) = A_ + (uint64_t)(int64_t)(int32_t)I->e; break;
        case X_JMP: pc = I->a; break;
        case X_BR: pc = A_ ? I->b : I->c; break;
        case X_SWITCH: pc = exec_switch(p, I, regs); break;
        case X_CALL:
            regs = exec_call(g, it, I, regs, pc);
            pc = p->funcs[I->a].code;
            break;
        case X_RET:
            if (it->depth == 0)
                return stop(it, pc, regs, R_DONE);
            regs = exec_return(g, it, I, regs, &pc);
            break;
        case X_UNREACHABLE: return stop(it, pc - 1, it->regs, -1);
        case X_BARRIER: return stop(it, pc, regs, R_BARRIER);
        case X_COLL: return stop(it, pc - 1, regs, R_COLL);
        case X_EXT: exec_ext(I, regs); break;
        case X_EXTOUT:
            R_(I->d) = spvx_ext_out(I->c, I->w, A_, I->b == SPV_NONE ? 0 : B_, &R_(I->e));
            break;
        default: return stop(it, pc - 1, it->regs, -1);
        }
    }
}
