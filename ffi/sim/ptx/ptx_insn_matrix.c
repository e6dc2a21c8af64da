/* The parse families of the warp-level matrix instructions (ldmatrix, mma)
 * and of the asynchronous copies (cp.async), from ptx_opcodes.def; their
 * executors are ptx_exec_mma.c and ptx_exec_async.c.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "ptx_insn.h"
#include "ptx_mma_forms.h"

/* ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans][.shared[::cta]].b16 d, [a]:
 * in.vec matrices, in.mode 1 for .trans, d in in.v (x1's d may be braced). */
int parse_ldmatrix(parser *ps, insn *x)
{
    NEEDS(2, 2);
    int num = m8n8_matrices(x);
    if (!num)
        return REFUSE("unsupported instruction '%s'", x->opname);
    x->rc = ptx_addr_operand(ps, &x->ops[1], x->line, &x->in);
    if (num == 1 && x->ops[0].kind == O_NAME)
        DST(0, v[0]);
    else if (x->ops[0].kind != O_VEC || x->ops[0].nv != num)
        return REFUSE("'%s' needs a vector of %d", x->opname, num);
    else
        x->rc = x->rc ? x->rc : ptx_vec_slots(ps, &x->ops[0], T_B32, x->line, 1, x->in.v);
    return 0;
}

/* The slots of one braced mma operand, appended to the function's lists. */
static int mma_list(parser *ps, insn *x, int k, int count, int dst)
{
    pfunc *f = ps->f;
    opnd *o = &x->ops[k];
    if (count == 1 && o->kind == O_NAME) { /* a one-element brace is its scalar */
        if (strlen(o->name) >= sizeof o->vnames[0])
            return REFUSE("'%s': operand %d's name is too long", x->opname, k + 1);
        o->kind = O_VEC;
        o->nv = 1;
        memmove(o->vnames[0], o->name, strlen(o->name) + 1);
    }
    if (o->kind != O_VEC || o->nv != count)
        return REFUSE("'%s': operand %d needs a vector of %d", x->opname, k + 1, count);
    for (int i = 0; i < count; i++)
        if (!GROW(f->lists, f->nlists, f->cap_lists))
            return ptx_nomem(ps);
        else
            f->lists[f->nlists++] = PTX_NONE;
    return ptx_vec_slots(ps, &x->ops[k], T_B32, x->line, dst, &f->lists[f->nlists - count]);
}

/* An mma type modifier: the register types, plus tf32; 0 if none. */
static int mma_type(const char *s)
{
    return !strcmp(s, "tf32") ? T_TF32 : ptx_type_named(s);
}

/* Whether the types d, a, b, c fit a shape's input family. */
static int mma_types_fit(const mma_shape *sh, const int *ty, int sat)
{
    int d = ty[0], a = ty[1], b = ty[2], c = ty[3];
    switch (sh->in) {
    case IN_HALF:
        if (a != b || sat)
            return 0;
        if (a == T_BF16)
            return d == T_F32 && c == T_F32;
        return a == T_F16 && (d == T_F16 || d == T_F32) && (c == T_F16 || c == T_F32);
    case IN_TF32: return a == T_TF32 && b == T_TF32 && d == T_F32 && c == T_F32 && !sat;
    case IN_INT8:
        return (a == T_S8 || a == T_U8) && (b == T_S8 || b == T_U8) && d == T_S32 && c == T_S32;
    default: return a == T_F64 && b == T_F64 && d == T_F64 && c == T_F64 && !sat;
    }
}

/* mma.sync.aligned.SHAPE.row.col[.satfinite | .rn].dtype.atype.btype.ctype d, a, b, c
 * for the shapes and types of g_mma_shapes (ptx_mma_forms.h): in.mode the
 * shape's index, in.type a's type, in.type2 d's, in.imm b's | c's << 8,
 * FL_SAT for .satfinite; aux indexes d, a, b, c in the function's lists. */
int parse_mma(parser *ps, insn *x)
{
    const mods *md = &x->md;
    int ty[4], nt = 0, sat = 0, rn = 0, k = 0;
    int ok = md->n >= 9 && !strcmp(md->m[0], "sync") && !strcmp(md->m[1], "aligned") &&
             !strcmp(md->m[3], "row") && !strcmp(md->m[4], "col");
    for (int i = 5; ok && i < md->n; i++) {
        if (nt == 0 && !sat && !rn && !strcmp(md->m[i], "satfinite"))
            sat = 1;
        else if (nt == 0 && !sat && !rn && !strcmp(md->m[i], "rn"))
            rn = 1;
        else if (nt < 4 && (ty[nt] = mma_type(md->m[i])) != 0)
            nt++;
        else
            ok = 0;
    }
    while (ok && nt == 4 && k < MMA_NSHAPES &&
           (strcmp(md->m[2], g_mma_shapes[k].name) || !mma_types_fit(&g_mma_shapes[k], ty, sat)))
        k++;
    if (!ok || nt != 4 || k == MMA_NSHAPES || (rn && ty[0] != T_F64))
        return REFUSE("unsupported instruction '%s'", x->opname);
    NEEDS(4, 4);
    take_all(x);
    const mma_shape *sh = &g_mma_shapes[k];
    x->in.mode = (uint8_t)k;
    x->in.type = (uint8_t)ty[1];
    x->in.type2 = (uint8_t)ty[0];
    x->in.imm = ty[2] | ty[3] << 8;
    x->in.flags = sat ? FL_SAT : 0;
    x->in.aux = (int32_t)ps->f->nlists;
    if (mma_list(ps, x, 0, mma_regs(sh->m, sh->n, ty[0]), 1) ||
        mma_list(ps, x, 1, mma_regs(sh->m, sh->k, ty[1]), 0) ||
        mma_list(ps, x, 2, mma_regs(sh->k, sh->n, ty[2]), 0) ||
        mma_list(ps, x, 3, mma_regs(sh->m, sh->n, ty[3]), 0))
        return -1;
    return 0;
}

/* The type a register name was declared with (T_*), or 0 for another name. */
static int reg_type(parser *ps, const char *name)
{
    uint32_t slot;
    if (!ptx_reg_lookup(ps, name, &slot))
        return 0;
    for (size_t i = 0; i < ps->nregs; i++)
        if (slot >= ps->regs[i].base &&
            slot < ps->regs[i].base + (uint32_t)(ps->regs[i].count ? ps->regs[i].count : 1))
            return ps->regs[i].type;
    return 0;
}

/* cp.async.{ca,cg}.shared[::cta].global[.L2::cache_hint][.L2::{64,128,256}B]
 *     [dst], [src], cp-size[, src-size | ignore-src][, cache-policy]:
 * in.a + in.imm the shared destination, in.b + in.aux the global source,
 * in.vec cp-size (4, 8 or 16; .cg only 16), in.c the src-size register or
 * in.e the ignore-src predicate (PTX_NONE when absent). */
static int parse_cp_copy(parser *ps, insn *x)
{
    int hint = has(&x->md, "L2::cache_hint"), cg = has(&x->md, "cg");
    int ca = has(&x->md, "ca");
    int dst_sp = 0, src_sp = 0; /* .shared then .global: the destination's space first */
    for (int i = 0; i < x->md.n; i++) {
        if (!strcmp(x->md.m[i], "shared") || !strcmp(x->md.m[i], "shared::cta"))
            dst_sp = dst_sp ? -1 : i + 1;
        else if (!strcmp(x->md.m[i], "global"))
            src_sp = src_sp ? -1 : i + 1;
        else
            continue;
        x->md.used[i] = 1;
    }
    if (!has(&x->md, "async") || cg == ca || dst_sp <= 0 || src_sp <= dst_sp || x->nt)
        return REFUSE("unsupported instruction '%s'", x->opname);
    NEEDS(3, 4 + hint);
    const opnd *size = &x->ops[2];
    if (size->kind != O_INT || (size->bits != 4 && size->bits != 8 && size->bits != 16) ||
        (cg && size->bits != 16))
        return REFUSE("'%s': cp-size must be 4, 8 or 16 (.cg: 16)", x->opname);
    x->in.vec = (uint8_t)size->bits;
    x->in.mode = (uint8_t)cg;
    if (copy_addresses(ps, x, 0, 1))
        return -1;
    x->in.space = S_SHARED;
    if (x->n == 4 + hint) {
        const opnd *o = &x->ops[3];
        int pred = o->kind == O_NAME && reg_type(ps, o->name) == T_PRED;
        if (o->neg)
            return REFUSE("'%s': ignore-src cannot be negated", x->opname);
        if (pred)
            SRC(3, e, T_PRED);
        else
            SRC(3, c, T_U32);
    }
    if (hint && x->n < 4) /* the last operand is the cache-policy (a hint, not read) */
        return REFUSE("'%s' needs a cache-policy", x->opname);
    return 0;
}

/* cp.async and its groups: the copy, commit_group, wait_group N, wait_all. */
int parse_cp(parser *ps, insn *x)
{
    if (has(&x->md, "bulk"))
        return parse_bulk(ps, x);
    if (x->md.n == 2 && has(&x->md, "async") && has(&x->md, "commit_group")) {
        NEEDS(0, 0);
        x->in.op = OP_CP_COMMIT;
        return 0;
    }
    if (x->md.n == 2 && has(&x->md, "async") && has(&x->md, "wait_all")) {
        NEEDS(0, 0);
        x->in.op = OP_CP_WAIT;
        x->in.mode = 1; /* commit_group, then wait_group 0 */
        return 0;
    }
    if (x->md.n == 2 && has(&x->md, "async") && has(&x->md, "wait_group")) {
        NEEDS(1, 1);
        if (x->ops[0].kind != O_INT || x->ops[0].bits > 0xffff)
            return REFUSE("'%s' needs an integer constant", x->opname);
        x->in.op = OP_CP_WAIT;
        x->in.imm = (int64_t)x->ops[0].bits;
        return 0;
    }
    return parse_cp_copy(ps, x);
}

/* The fragment registers of one wmma operand: its slots appended to the
 * function's lists (the first at in.aux). */
static int wmma_list(parser *ps, insn *x, int k, int count, int dst)
{
    if (x->ops[k].kind == O_VEC && x->ops[k].nv != count)
        return REFUSE("'%s': operand %d needs a vector of %d", x->opname, k + 1, count);
    return mma_list(ps, x, k, count, dst);
}

/* wmma.load.{a,b,c}.sync.aligned.{row,col}.m16n16k16[.global|.shared[::cta]].type r, [p][, stride]
 * wmma.store.d.sync.aligned.{row,col}.m16n16k16[.space].type [p], r[, stride]:
 * in.mode bit 0 for .col, in.type the element type, in.vec the registers
 * (at in.aux in the lists), in.a + in.imm the address, in.b the stride or
 * PTX_NONE. */
static int parse_wmma_memory(parser *ps, insn *x, int store)
{
    const mods *md = &x->md;
    int n = md->n, col = n > 4 && !strcmp(md->m[4], "col");
    int which = n > 1 && !md->m[1][1] ? md->m[1][0] : 0;
    int t = n > 6 ? ptx_type_named(md->m[n - 1]) : 0;
    int sp = n == 8 ? space_of(&x->md) : S_GENERIC;
    int ok = (n == 7 || (n == 8 && sp != S_GENERIC && sp != S_LOCAL && sp != S_PARAM &&
                         sp != S_CONST)) &&
             !strcmp(md->m[2], "sync") && !strcmp(md->m[3], "aligned") &&
             (col || !strcmp(md->m[4], "row")) && !strcmp(md->m[5], "m16n16k16");
    if (store)
        ok = ok && which == 'd' && (t == T_F16 || t == T_F32);
    else if (which == 'a' || which == 'b')
        ok = ok && (t == T_F16 || t == T_BF16);
    else
        ok = ok && which == 'c' && (t == T_F16 || t == T_F32);
    if (!ok)
        return REFUSE("unsupported instruction '%s'", x->opname);
    NEEDS(2, 3);
    take_all(x);
    x->in.op = store ? OP_WMMA_STORE : OP_WMMA_LOAD;
    x->in.mode = (uint8_t)col;
    x->in.type = (uint8_t)t;
    x->in.space = (uint8_t)sp;
    x->in.vec = (uint8_t)(t == T_F16 && (which == 'a' || which == 'b') ? 8 : t == T_F32 ? 8 : 4);
    if (ptx_addr_operand(ps, &x->ops[store ? 0 : 1], x->line, &x->in))
        return -1;
    if (x->n == 3)
        SRC(2, b, T_U32);
    x->in.aux = (int32_t)ps->f->nlists;
    return wmma_list(ps, x, store ? 1 : 0, x->in.vec, !store);
}

/* wmma.mma.sync.aligned.{row,col}.{row,col}.m16n16k16.dtype.ctype (f16 inputs,
 * each of d and c f16 or f32) or ...m16n16k16.f32.bf16.bf16.f32: in.type
 * the inputs' type, in.type2 d's, in.imm c's; d, a, b, c at in.aux. */
static int parse_wmma_mma(parser *ps, insn *x)
{
    const mods *md = &x->md;
    int n = md->n, ok = (n == 8 || n == 10) && !strcmp(md->m[1], "sync") &&
                        !strcmp(md->m[2], "aligned") && !strcmp(md->m[5], "m16n16k16");
    for (int i = 3; ok && i < 5; i++)
        ok = !strcmp(md->m[i], "row") || !strcmp(md->m[i], "col");
    int dt = ok ? ptx_type_named(md->m[6]) : 0, ct = ok ? ptx_type_named(md->m[n - 1]) : 0;
    int at = T_F16;
    if (ok && n == 10) {
        at = T_BF16;
        ok = !strcmp(md->m[7], "bf16") && !strcmp(md->m[8], "bf16") && dt == T_F32 &&
             ct == T_F32;
    }
    ok = ok && (dt == T_F16 || dt == T_F32) && (ct == T_F16 || ct == T_F32);
    if (!ok)
        return REFUSE("unsupported instruction '%s'", x->opname);
    NEEDS(4, 4);
    take_all(x);
    x->in.type = (uint8_t)at;
    x->in.type2 = (uint8_t)dt;
    x->in.imm = ct;
    x->in.aux = (int32_t)ps->f->nlists;
    int nab = at == T_F16 ? 8 : 4;
    if (wmma_list(ps, x, 0, dt == T_F32 ? 8 : 4, 1) || wmma_list(ps, x, 1, nab, 0) ||
        wmma_list(ps, x, 2, nab, 0) || wmma_list(ps, x, 3, ct == T_F32 ? 8 : 4, 0))
        return -1;
    return 0;
}

int parse_wmma(parser *ps, insn *x)
{
    if (x->md.n && !strcmp(x->md.m[0], "load"))
        return parse_wmma_memory(ps, x, 0);
    if (x->md.n && !strcmp(x->md.m[0], "store"))
        return parse_wmma_memory(ps, x, 1);
    if (x->md.n && !strcmp(x->md.m[0], "mma"))
        return parse_wmma_mma(ps, x);
    return REFUSE("unsupported instruction '%s'", x->opname);
}

/* wgmma's input types: .f16 .bf16 (k16, the same for A and B), or each of
 * .e4m3 .e5m2 (k32); into in.type (T_F16, T_BF16, or T_B8 for 8-bit) and
 * bits 5.. of in.imm (5: 8-bit, 6: A is e5m2, 7: B is e5m2); 0 if refused. */
static int wgmma_inputs(const mods *md, int k, int dt, int64_t *bits)
{
    int at = ptx_type_named(md->m[5]), f8a = !strcmp(md->m[5], "e5m2") ? 2 : 0,
        f8b = !strcmp(md->m[6], "e5m2") ? 2 : 0;
    f8a |= !strcmp(md->m[5], "e4m3");
    f8b |= !strcmp(md->m[6], "e4m3");
    if (k == 32 && f8a && f8b && (dt == T_F32 || dt == T_F16)) {
        *bits = 32 | (f8a & 2) << 5 | (f8b & 2) << 6;
        return T_B8;
    }
    if (k == 16 && !strcmp(md->m[5], md->m[6]) &&
        ((at == T_F16 && (dt == T_F32 || dt == T_F16)) || (at == T_BF16 && dt == T_F32)))
        return at;
    return 0;
}

/* The immediates imm-scale-a, imm-scale-b (1 or -1) and, for 16-bit inputs,
 * imm-trans-a, imm-trans-b (0 or 1; A in registers: trans-b only), from
 * operand 4 on, as in.imm bits 0-3. */
static int wgmma_immediates(parser *ps, insn *x, int count, int regs_a)
{
    for (int k = 0; k < count; k++) {
        const opnd *o = &x->ops[4 + k];
        int64_t v = (int64_t)o->bits;
        int sign = k < 2; /* imm-scale-a/-b: 1 or -1; imm-trans-*: 0 or 1 */
        if (o->kind != O_INT || (sign ? (v != 1 && v != -1) : (v != 0 && v != 1)))
            return REFUSE("'%s': operand %d must be %s", x->opname, 5 + k,
                          sign ? "1 or -1" : "0 or 1");
        x->in.imm |= (int64_t)(sign ? v < 0 : (int)v) << (k + (regs_a && k == 2));
    }
    return 0;
}

/* wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype d, a-desc, b-desc,
 * scale-d, imm-scale-a, imm-scale-b[, imm-trans-a, imm-trans-b]: k16 with
 * f16 or bf16 inputs (the same), an f32 D (f16 too for f16 inputs), A by
 * descriptor or in 4 registers (then without imm-trans-a); k32 with e4m3 or
 * e5m2 inputs (each its own), an f32 or f16 D, A and B by descriptor,
 * K-major (no imm-trans).  B is always a descriptor.
 * in.mode N / 8, in.type the 16-bit inputs' type (T_B8 for 8-bit), in.type2
 * D's, in.a and in.b the descriptors, in.c scale-d, in.imm the immediates
 * (bit 0, 1: a, b scaled by -1; bit 2, 3: a, b transposed; bit 4: A in
 * registers; bits 5-7: wgmma_inputs); D at in.aux, then A's registers. */
static int parse_wgmma_mma(parser *ps, insn *x)
{
    const mods *md = &x->md;
    int n = 0, k = 0, ok = md->n == 7 && !strcmp(md->m[1], "sync") &&
                           !strcmp(md->m[2], "aligned") &&
                           sscanf(md->m[3], "m64n%dk%d", &n, &k) == 2 && n >= 8 && n <= 256 &&
                           n % 8 == 0 && (k == 16 || k == 32);
    char shape[24];
    snprintf(shape, sizeof shape, "m64n%dk%d", n, k);
    int64_t f8 = 0;
    int dt = ok ? ptx_type_named(md->m[4]) : 0;
    int at = ok && !strcmp(md->m[3], shape) ? wgmma_inputs(md, k, dt, &f8) : 0;
    if (!at)
        return REFUSE("unsupported instruction '%s'", x->opname);
    int regs_a = x->ops[1].kind == O_VEC; /* A from registers: no imm-trans-a */
    if (regs_a && f8)
        return REFUSE("'%s': an 8-bit A in registers is not supported", x->opname);
    int imms = f8 ? 2 : 4 - regs_a;
    NEEDS(4 + imms, 4 + imms);
    take_all(x);
    if (x->ops[2].kind != O_NAME || (!regs_a && x->ops[1].kind != O_NAME))
        return REFUSE("'%s': B must be a descriptor, A one or registers", x->opname);
    x->in.imm = f8 | regs_a << 4;
    if (wgmma_immediates(ps, x, imms, regs_a))
        return -1;
    x->in.op = OP_WGMMA_MMA;
    x->in.mode = (uint8_t)(n / 8);
    x->in.type = (uint8_t)at;
    x->in.type2 = (uint8_t)dt;
    if (!regs_a)
        SRC(1, a, T_B64);
    SRC(2, b, T_B64);
    if (x->ops[3].kind == O_INT && x->ops[3].bits > 1)
        return REFUSE("'%s': scale-d must be a predicate, 0 or 1", x->opname);
    if (x->ops[3].kind == O_NAME && x->ops[3].neg)
        return REFUSE("'%s': a negated scale-d is not supported", x->opname);
    SRC(3, c, T_PRED);
    ps->m->uses_wgmma = 1;
    x->in.aux = (int32_t)ps->f->nlists;
    if (wmma_list(ps, x, 0, dt == T_F32 ? n / 2 : n / 4, 1))
        return -1;
    return regs_a ? wmma_list(ps, x, 1, 4, 0) : 0; /* A's registers follow D's */
}

/* wgmma.fence / commit_group / wait_group N (.sync.aligned), mma_async. */
int parse_wgmma(parser *ps, insn *x)
{
    const mods *md = &x->md;
    int tail = md->n == 3 && !strcmp(md->m[1], "sync") && !strcmp(md->m[2], "aligned");
    if (tail && !strcmp(md->m[0], "fence")) {
        NEEDS(0, 0);
        x->in.op = OP_WGMMA_FENCE;
    } else if (tail && !strcmp(md->m[0], "commit_group")) {
        NEEDS(0, 0);
        x->in.op = OP_WGMMA_COMMIT;
    } else if (tail && !strcmp(md->m[0], "wait_group")) {
        NEEDS(1, 1);
        if (x->ops[0].kind != O_INT || x->ops[0].bits > 7)
            return REFUSE("'%s' needs an integer constant 0..7", x->opname);
        x->in.op = OP_WGMMA_WAIT;
        x->in.imm = (int64_t)x->ops[0].bits;
    } else if (md->n && !strcmp(md->m[0], "mma_async")) {
        return parse_wgmma_mma(ps, x);
    } else {
        return REFUSE("unsupported instruction '%s'", x->opname);
    }
    take_all(x);
    return 0;
}
