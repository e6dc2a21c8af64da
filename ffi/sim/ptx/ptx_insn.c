/* PTX instructions -> decoded instructions (pinsn).
 *
 * The opcode's base name is looked up in the table generated from
 * ptx_opcodes.def, which names the row's operation and the family handler
 * that reads its modifiers and operands.  Whatever a handler does not
 * consume is checked here once: an unknown modifier, a missing type or
 * rounding mode refuses the instruction with a message naming it.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_insn.h"

static void split_opcode(const char *op, mods *md)
{
    memset(md, 0, sizeof *md);
    const char *p = op, *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    md->overflow = len >= sizeof md->base;
    snprintf(md->base, sizeof md->base, "%.*s", (int)len, p);
    while (dot) {
        if (md->n == 12) {
            md->overflow = 1;
            break;
        }
        p = dot + 1;
        dot = strchr(p, '.');
        len = dot ? (size_t)(dot - p) : strlen(p);
        md->overflow |= len >= sizeof md->m[0];
        snprintf(md->m[md->n++], sizeof md->m[0], "%.*s", (int)len, p);
    }
}

/* The types among the modifiers, in order. */
static int types_of(mods *md, int *types, int max)
{
    int n = 0;
    for (int i = 0; i < md->n; i++) {
        int t = ptx_type_named(md->m[i]);
        if (t && n < max) {
            types[n++] = t;
            md->used[i] = 1;
        }
    }
    return n;
}

/* Modifiers that change nothing for a CPU executing one thread at a time
 * in order: caching, ordering and scope hints. */
static int harmless(const char *s)
{
    static const char *const ok[] = {
        "nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "volatile", "relaxed", "acquire",
        "release", "acq_rel", "weak", "sc", "cta", "gpu", "sys", "uni", "sync", "aligned",
        "unified", "noftz", NULL,
    };
    for (int i = 0; ok[i]; i++)
        if (strcmp(s, ok[i]) == 0)
            return 1;
    return !strncmp(s, "L1::", 4) || !strncmp(s, "L2::", 4);
}

static int rounding_of(mods *md)
{
    static const char *const names[] = {NULL, "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rna"};
    for (int r = 1; r <= RND_RNA; r++)
        if (has(md, names[r]))
            return r;
    return RND_NONE;
}

static int cmp_of(mods *md)
{
    static const char *const names[] = {NULL, "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi",
                                        "hs", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
    for (int c = 1; c <= CMP_NAN; c++)
        if (has(md, names[c]))
            return c;
    return 0;
}

/* Sets in.flags for each modifier of the NULL-terminated list present. */
static void take_flags(insn *x, const char *const *names)
{
    static const struct { const char *name; unsigned flag; } fl[] = {
        {"ftz", FL_FTZ}, {"sat", FL_SAT}, {"approx", FL_APPROX},
        {"cc", FL_CC}, {"NaN", FL_NAN}, {"shiftamt", FL_SHIFTAMT}, {"relu", FL_RELU},
    };
    for (; *names; names++)
        for (size_t k = 0; k < sizeof fl / sizeof fl[0]; k++)
            if (strcmp(*names, fl[k].name) == 0 && has(&x->md, fl[k].name))
                x->in.flags |= (uint8_t)fl[k].flag;
}

/* The 16-bit float types and their pairs: what .relu applies to. */
static int half_type(int t) { return t == T_F16 || t == T_BF16 || t == T_F16X2 || t == T_BF16X2; }

/* .hi / .wide / .lo of mul and mad. */
static int mulw_of(mods *md)
{
    if (has(md, "hi"))
        return MULW_HI;
    if (has(md, "wide"))
        return MULW_WIDE;
    (void)has(md, "lo");
    return MULW_LO;
}

/* The index in names[1..count] of the last modifier present (all present
 * ones are consumed); 0 if none. */
static int last_of(mods *md, const char *const *names, int count)
{
    int r = 0;
    for (int k = 1; k <= count; k++)
        if (names[k] && has(md, names[k]))
            r = k;
    return r;
}

/* The index in names[1..count] of the first modifier present (only that one
 * is consumed); 0 if none. */
static int first_of(mods *md, const char *const *names, int count)
{
    for (int k = 1; k <= count; k++)
        if (names[k] && has(md, names[k]))
            return k;
    return 0;
}

/* p|q: the second destination of setp, shfl and match. */
static void pair_dst(parser *ps, insn *x)
{
    if (x->rc || !x->ops[0].pair[0])
        return;
    opnd q;
    memset(&q, 0, sizeof q);
    q.kind = O_NAME;
    snprintf(q.name, sizeof q.name, "%s", x->ops[0].pair);
    x->rc = ptx_dst_slot(ps, &q, x->line, &x->in.d2);
}

/* ------------------------------------------------------------- families */

static int parse_mov(parser *ps, insn *x)
{
    NEEDS(2, 2);
    if ((x->ops[0].kind == O_VEC && x->ops[0].nv > 4) ||
        (x->ops[1].kind == O_VEC && x->ops[1].nv > 4))
        return REFUSE("'%s': a vector of more than 4 elements", x->opname);
    const opnd *src = &x->ops[1];
    if (src->kind == O_NAME && (!strcmp(src->name, "%clock") || !strcmp(src->name, "%clock64") ||
                                !strcmp(src->name, "%globaltimer") ||
                                !strcmp(src->name, "%clock_hi"))) {
        x->in.op = OP_CLOCK;
        x->in.mode = !strcmp(src->name, "%globaltimer") ? 1 : 0;
        DST(0, d);
    } else if (x->ops[0].kind == O_VEC) {
        x->in.op = OP_UNPACK;
        x->in.vec = (uint8_t)x->ops[0].nv;
        x->rc = ptx_vec_slots(ps, &x->ops[0], x->ty, x->line, 1, x->in.v);
        SRC(1, a, x->ty);
    } else if (src->kind == O_VEC) {
        x->in.op = OP_PACK;
        x->in.vec = (uint8_t)src->nv;
        DST(0, d);
        x->rc = x->rc ? x->rc : ptx_vec_slots(ps, src, x->ty, x->line, 0, x->in.v);
    } else {
        DST(0, d);
        SRC(1, a, x->ty);
    }
    return 0;
}

static int parse_ldst(parser *ps, insn *x)
{
    int st = x->in.op == OP_ST;
    NEEDS(2, 2);
    x->in.space = (uint8_t)space_of(&x->md);
    if (has(&x->md, "v2"))
        x->in.vec = 2;
    else if (has(&x->md, "v4"))
        x->in.vec = 4;
    else if (has(&x->md, "v8"))
        return REFUSE("unsupported instruction '%s' (.v8)", x->opname);
    if (!x->ty || x->ty == T_PRED)
        return REFUSE("'%s' needs a type", x->opname);
    opnd *addr = &x->ops[st ? 0 : 1], *val = &x->ops[st ? 1 : 0];
    x->rc = ptx_addr_operand(ps, addr, x->line, &x->in);
    if (x->in.space == S_PARAM) {
        /* A kernel's own parameters live in the launch's buffer; a .func's
         * parameters and call-site .param variables in the per-lane frame. */
        sym *s = addr->name[0] ? ptx_lookup(ps, addr->name) : NULL;
        if (!ps->f->is_entry || (s && s->kind == SYM_FPARAM))
            x->in.space = S_FRAME;
    }
    if (x->in.vec > 1) {
        if (val->kind != O_VEC || val->nv != x->in.vec)
            return REFUSE("'%s' needs a vector of %d", x->opname, x->in.vec);
        x->rc = x->rc ? x->rc : ptx_vec_slots(ps, val, x->ty, x->line, !st, x->in.v);
    } else if (st) {
        SRC(1, b, x->ty);
    } else {
        DST(0, d);
    }
    return 0;
}

static int parse_cvta(parser *ps, insn *x)
{
    NEEDS(2, 2);
    x->in.op = has(&x->md, "to") ? OP_CVTA_TO : OP_CVTA_FROM;
    x->in.space = (uint8_t)space_of(&x->md);
    if (x->in.space == S_GENERIC)
        return REFUSE("'%s' needs a state space", x->opname);
    DST(0, d);
    SRC(1, a, x->ty);
    return 0;
}

/* cvt with an fp8 pair (sm_89 on): cvt.rn.f16x2.{e4m3x2,e5m2x2} d, a (a .b16)
 * and cvt.rn.satfinite.{e4m3x2,e5m2x2}.{f32 d, a, b | f16x2 d, a} (d .b16);
 * in.imm FP8_E4M3 or FP8_E5M2, | FP8_TO for an fp8 destination.  .relu and
 * the other rounding modes are left unread, so refused by name. */
static int parse_cvt_fp8(parser *ps, insn *x, int at)
{
    int to = 0, kind = strcmp(x->md.m[at], "e4m3x2") ? FP8_E5M2 : FP8_E4M3;
    x->md.used[at] = 1;
    for (int i = at + 1; i < x->md.n; i++)
        to |= ptx_type_named(x->md.m[i]) != 0; /* the source's type follows: to fp8 */
    if (x->nt != 1 || x->in.mode != RND_RN || (to && !has(&x->md, "satfinite")))
        return REFUSE("unsupported instruction '%s'", x->opname);
    int other = x->types[0], pair = to && other == T_F32;
    if (to ? other != T_F32 && other != T_F16X2 : other != T_F16X2)
        return REFUSE("unsupported instruction '%s'", x->opname);
    NEEDS(2 + pair, 2 + pair);
    x->in.imm = kind | (to ? FP8_TO : 0);
    x->in.type = (uint8_t)(to ? T_B16 : T_F16X2);
    x->in.type2 = (uint8_t)(to ? other : T_B16);
    DST(0, d);
    SRC(1, a, x->in.type2);
    if (pair)
        SRC(2, b, T_F32);
    return 0;
}

static int parse_cvt(parser *ps, insn *x)
{
    x->in.mode = (uint8_t)rounding_of(&x->md);
    for (int i = 0; i < x->md.n; i++)
        if (!strcmp(x->md.m[i], "e4m3x2") || !strcmp(x->md.m[i], "e5m2x2"))
            return parse_cvt_fp8(ps, x, i);
    take_flags(x, (const char *const[]){"ftz", "sat", NULL});
    if (x->nt != 2)
        return REFUSE("'%s' needs two types", x->opname);
    x->in.type = (uint8_t)x->types[0];
    x->in.type2 = (uint8_t)x->types[1];
    if (x->in.type == T_F16X2 || x->in.type == T_BF16X2) {
        NEEDS(3, 3);
        DST(0, d);
        SRC(1, a, x->types[1]);
        SRC(2, b, x->types[1]);
    } else {
        NEEDS(2, 2);
        DST(0, d);
        SRC(1, a, x->types[1]);
    }
    return 0;
}

static int parse_binary(parser *ps, insn *x)
{
    NEEDS(3, 3);
    x->in.mode = (uint8_t)rounding_of(&x->md);
    take_flags(x, (const char *const[]){"ftz", "sat", NULL});
    if (has(&x->md, "approx") || has(&x->md, "full"))
        x->in.flags |= FL_APPROX;
    take_flags(x, (const char *const[]){"cc", "NaN", "relu", NULL});
    x->in.type2 = (uint8_t)mulw_of(&x->md);
    int ty = x->ty, shift_type = (x->in.op == OP_SHL || x->in.op == OP_SHR) ? T_U32 : ty;
    if ((x->in.flags & FL_RELU) && (!half_type(ty) || (x->in.op != OP_MIN && x->in.op != OP_MAX)))
        return REFUSE("unsupported instruction '%s' (modifier .relu)", x->opname);
    DST(0, d);
    SRC(1, a, ty);
    SRC(2, b, shift_type);
    if (x->in.type2 == MULW_WIDE && ty != T_U16 && ty != T_S16 && ty != T_U32 && ty != T_S32)
        return REFUSE("'%s': .wide needs a 16- or 32-bit type", x->opname);
    return 0;
}

static int parse_mad(parser *ps, insn *x)
{
    NEEDS(4, 4);
    int ty = x->ty, spelled_mad = x->in.op == OP_MAD;
    x->in.mode = (uint8_t)rounding_of(&x->md);
    take_flags(x, (const char *const[]){"ftz", "sat", "cc", "relu", NULL});
    x->in.type2 = (uint8_t)mulw_of(&x->md);
    if ((x->in.flags & FL_RELU) && (!half_type(ty) || x->in.op != OP_FMA))
        return REFUSE("unsupported instruction '%s' (modifier .relu)", x->opname);
    if (x->in.op == OP_MAD || x->in.op == OP_FMA) /* both spellings: by type */
        x->in.op = ptx_is_float_type(ty) || ty == T_F16X2 || ty == T_BF16X2 ? OP_FMA : OP_MAD;
    if (spelled_mad && x->in.op == OP_FMA && x->in.mode == RND_NONE && ty != T_F32)
        return REFUSE("'%s' without a rounding mode", x->opname);
    int addend = ty;
    if (x->in.type2 == MULW_WIDE)
        addend = ty == T_U32 ? T_U64 : ty == T_S32 ? T_S64 : ty == T_U16 ? T_U32 : T_S32;
    DST(0, d);
    SRC(1, a, ty);
    SRC(2, b, ty);
    SRC(3, c, addend);
    return 0;
}

static int parse_unary(parser *ps, insn *x)
{
    NEEDS(2, 2);
    x->in.mode = (uint8_t)rounding_of(&x->md);
    take_flags(x, (const char *const[]){"ftz", "approx", "shiftamt", NULL});
    DST(0, d);
    SRC(1, a, x->ty);
    return 0;
}

static int parse_prmt(parser *ps, insn *x)
{
    static const char *const modes[] = {NULL, "f4e", "b4e", "rc8", "ecl", "ecr", "rc16"};
    NEEDS(4, 4);
    x->in.mode = (uint8_t)last_of(&x->md, modes, 6);
    DST(0, d); SRC(1, a, T_B32); SRC(2, b, T_B32); SRC(3, c, T_B32);
    return 0;
}

static int parse_shf(parser *ps, insn *x)
{
    NEEDS(4, 4);
    if (has(&x->md, "r"))
        x->in.flags |= FL_RIGHT;
    else if (!has(&x->md, "l"))
        return REFUSE("'%s' needs .l or .r", x->opname);
    if (has(&x->md, "wrap"))
        x->in.flags |= FL_WRAP;
    else if (!has(&x->md, "clamp"))
        return REFUSE("'%s' needs .wrap or .clamp", x->opname);
    DST(0, d); SRC(1, a, T_B32); SRC(2, b, T_B32); SRC(3, c, T_U32);
    return 0;
}

static int parse_fns(parser *ps, insn *x)
{
    NEEDS(4, 4);
    DST(0, d); SRC(1, a, T_B32); SRC(2, b, T_U32); SRC(3, c, T_S32);
    return 0;
}

static int parse_bfe(parser *ps, insn *x)
{
    NEEDS(4, 4);
    DST(0, d); SRC(1, a, x->ty); SRC(2, b, T_U32); SRC(3, c, T_U32);
    return 0;
}

static int parse_bfi(parser *ps, insn *x)
{
    NEEDS(5, 5);
    DST(0, d); SRC(1, a, x->ty); SRC(2, b, x->ty); SRC(3, c, T_U32); SRC(4, e, T_U32);
    return 0;
}

static int parse_lop3(parser *ps, insn *x)
{
    NEEDS(5, 5);
    if (x->ops[4].kind != O_INT)
        return REFUSE("lop3: the table must be an immediate");
    x->in.imm = (int64_t)(x->ops[4].bits & 0xff);
    DST(0, d); SRC(1, a, T_B32); SRC(2, b, T_B32); SRC(3, c, T_B32);
    return 0;
}

static int parse_setp(parser *ps, insn *x)
{
    NEEDS(3, 4);
    x->in.mode = (uint8_t)cmp_of(&x->md);
    if (!x->in.mode)
        return REFUSE("'%s' needs a comparison", x->opname);
    mods *md = &x->md;
    x->in.type2 = has(md, "and") ? BOOL_AND : has(md, "or") ? BOOL_OR
                : has(md, "xor") ? BOOL_XOR : BOOL_NONE;
    take_flags(x, (const char *const[]){"ftz", NULL});
    if ((x->in.type2 != BOOL_NONE) != (x->n == 4))
        return REFUSE("'%s': a boolean operation needs a predicate operand", x->opname);
    DST(0, d);
    pair_dst(ps, x);
    SRC(1, a, x->ty);
    SRC(2, b, x->ty);
    if (x->n == 4) {
        SRC(3, c, T_PRED);
        if (x->ops[3].neg)
            x->in.neg |= 4;
    }
    return 0;
}

/* set.CmpOp[.BoolOp].dtype.stype d, a, b[, c]: setp's comparison, written as
 * 1.0f or all ones (dtype .f32 or an integer) for true and 0 for false. */
static int parse_set(parser *ps, insn *x)
{
    if (x->nt != 2 || x->types[1] == T_PRED || x->types[0] == T_PRED)
        return REFUSE("'%s' needs a destination and a source type", x->opname);
    int dt = x->types[0], st = x->types[1];
    int half_dt = dt == T_F16 || dt == T_BF16 || dt == T_U16 || dt == T_S16 || dt == T_B16;
    if (!(dt == T_F32 || dt == T_U32 || dt == T_S32 || dt == T_B32 ||
          (half_dt && (st == T_F16 || st == T_BF16))))
        return REFUSE("'%s': destination type must be .u32 .s32 .b32 or .f32, or a 16-bit type "
                      "for .f16 and .bf16 sources", x->opname);
    if (parse_setp(ps, x))
        return -1;
    x->in.imm = dt;
    if (x->in.d2 != PTX_NONE)
        return REFUSE("'%s' has one destination", x->opname);
    return 0;
}

static int parse_select(parser *ps, insn *x)
{
    NEEDS(4, 4);
    DST(0, d); SRC(1, a, x->ty); SRC(2, b, x->ty); SRC(3, c, T_PRED);
    if (x->ops[3].neg)
        x->in.neg |= 4;
    return 0;
}

static int parse_testp(parser *ps, insn *x)
{
    static const char *const tests[] = {NULL,     "finite", "infinite", "number",
                                        "notanumber", "normal", "subnormal"};
    NEEDS(2, 2);
    x->in.mode = (uint8_t)last_of(&x->md, tests, 6);
    if (!x->in.mode)
        return REFUSE("'%s' needs a test", x->opname);
    DST(0, d); SRC(1, a, x->ty);
    return 0;
}

/* isspacep.space p, a: whether generic address a lies in the state space's
 * window (nvcc's and numba's runtime libraries ask before a free). */
static int parse_isspacep(parser *ps, insn *x)
{
    static const struct { const char *name; int space; } spaces[] = {
        {"global", S_GLOBAL}, {"shared", S_SHARED}, {"shared::cta", S_SHARED},
        {"shared::cluster", S_SHARED}, {"local", S_LOCAL}, {"const", S_CONST},
        {"param", S_PARAM}, {"param::entry", S_PARAM},
    };
    NEEDS(2, 2);
    for (size_t k = 0; k < sizeof spaces / sizeof spaces[0] && !x->in.space; k++)
        if (has(&x->md, spaces[k].name))
            x->in.space = (uint8_t)spaces[k].space;
    if (!x->in.space)
        return REFUSE("'%s' needs a state space", x->opname);
    DST(0, d); SRC(1, a, T_U64);
    return 0;
}

static int parse_branch(parser *ps, insn *x)
{
    NEEDS(1, 1);
    if (x->ops[0].kind != O_NAME)
        return REFUSE("bra: expected a label (indirect branches are not supported)");
    if (!GROW(ps->fix, ps->nfix, ps->cap_fix))
        return ptx_nomem(ps);
    ps->fix[ps->nfix].pc = ps->f->ncode;
    ps->fix[ps->nfix].line = x->line;
    snprintf(ps->fix[ps->nfix].label, sizeof ps->fix[0].label, "%s", x->ops[0].name);
    ps->nfix++;
    return 0;
}

static int parse_noarg(parser *ps, insn *x)
{
    NEEDS(0, 0);
    return 0;
}

/* bar.red.popc.u32 d, a, {!}c and bar.red.{and,or}.pred p, a, {!}c: a
 * bar.sync whose every thread gets the reduction of c over the block. */
static int parse_bar_red(parser *ps, insn *x)
{
    static const char *const ops[] = {NULL, "popc", "and", "or"};
    mods *md = &x->md;
    (void)has(md, "cta");
    (void)has(md, "sync");
    x->in.mode = (uint8_t)first_of(md, ops, 3);
    if (!x->in.mode)
        return REFUSE("'%s' needs .popc, .and or .or", x->opname);
    if ((x->in.mode == BAR_RED_POPC) != (x->ty == T_U32) || (x->ty != T_U32 && x->ty != T_PRED))
        return REFUSE("'%s': .popc is .u32, .and and .or are .pred", x->opname);
    NEEDS(3, 4);
    if (x->n == 4)
        return REFUSE("'%s' with a thread count is not supported", x->opname);
    DST(0, d);
    SRC(1, a, T_B32);
    SRC(2, c, T_PRED);
    if (x->ops[2].neg)
        x->in.neg |= 4;
    ps->f->uses_barrier = 1;
    return 0;
}

static int parse_barrier(parser *ps, insn *x)
{
    mods *md = &x->md;
    if (has(md, "warp")) {
        NEEDS(1, 1);
        (void)has(md, "sync");
        x->in.op = OP_BARWARP;
        SRC(0, a, T_B32);
        return 0;
    }
    if (has(md, "red"))
        return parse_bar_red(ps, x);
    if (!has(md, "sync") && !(BASE_IS("barrier") && md->n == 0) && !has(md, "cta"))
        return REFUSE("unsupported instruction '%s' (only bar.sync and bar.red)", x->opname);
    (void)has(md, "cta");
    (void)has(md, "sync");
    NEEDS(1, 2);
    if (x->n == 2)
        return REFUSE("'%s' with a thread count is not supported", x->opname);
    ps->f->uses_barrier = 1;
    return 0;
}

/* membar, fence, prefetch, nanosleep, pmevent: ordering only, which a
 * sequentially consistent interpreter already gives. */
static int parse_fence(parser *ps, insn *x)
{
    for (int i = 0; i < x->md.n; i++)
        x->md.used[i] = 1;
    if (!strcmp(x->opname, "fence.proxy.async") ||
        !strcmp(x->opname, "fence.proxy.async.shared::cta")) {
        NEEDS(0, 0);
        x->in.op = OP_FENCE_PROXY; /* the generic proxy's shared writes reach the async proxy */
        return 0;
    }
    if (BASE_IS("fence") && has(&x->md, "proxy") && has(&x->md, "tensormap::generic")) {
        /* a tensor map written through the generic proxy, read by the tensormap proxy:
         * cuda-sim's cp.async.bulk.tensor reads the map's bytes as they are */
        int acquire = has(&x->md, "acquire");
        NEEDS(2 * acquire, 2 * acquire);
        if (acquire && (x->ops[0].kind != O_ADDR || x->ops[1].kind != O_INT ||
                        x->ops[1].bits != 128))
            return REFUSE("'%s' needs [address], 128", x->opname);
        return 0;
    }
    if (BASE_IS("fence") && has(&x->md, "mbarrier_init")) {
        NEEDS(0, 0); /* a cluster of one block: mbarrier.init is already visible */
        return 0;
    }
    if (BASE_IS("fence") && (has(&x->md, "proxy") || has(&x->md, "mbarrier_init")))
        return REFUSE("unsupported instruction '%s'", x->opname);
    return 0;
}

static int parse_atomic(parser *ps, insn *x)
{
    static const char *const ops[] = {NULL, "add", "min", "max", "exch", "cas",
                                      "and", "or",  "xor", "inc",  "dec"};
    mods *md = &x->md;
    int ty = x->ty;
    x->in.space = (uint8_t)space_of(md);
    x->in.mode = (uint8_t)last_of(md, ops, ATOM_DEC);
    if (!x->in.mode)
        return REFUSE("'%s' needs an operation", x->opname);
    if (has(md, "v2") || has(md, "v4") || has(md, "noftz"))
        return REFUSE("unsupported instruction '%s'", x->opname);
    if (ty == T_F16 || ty == T_BF16 || ty == T_F16X2 || ty == T_BF16X2 || ty == T_B128)
        return REFUSE("unsupported instruction '%s' (type)", x->opname);
    int k = 0, cas = x->in.mode == ATOM_CAS;
    if (x->in.op == OP_ATOM) {
        NEEDS(cas ? 4 : 3, cas ? 4 : 3);
        DST(0, d);
        k = 1;
    } else {
        NEEDS(2, 2);
    }
    x->rc = x->rc ? x->rc : ptx_addr_operand(ps, &x->ops[k], x->line, &x->in);
    SRC(k + 1, b, ty);
    if (cas)
        SRC(k + 2, c, ty);
    return 0;
}

static int parse_shfl(parser *ps, insn *x)
{
    static const char *const modes[] = {NULL, "up", "down", "bfly", "idx"};
    if (!has(&x->md, "sync"))
        return REFUSE("'%s': shfl without .sync is not supported (sm_70+)", x->opname);
    NEEDS(5, 5);
    x->in.mode = (uint8_t)first_of(&x->md, modes, SHFL_IDX);
    if (!x->in.mode)
        return REFUSE("'%s' needs a mode", x->opname);
    DST(0, d);
    pair_dst(ps, x);
    SRC(1, a, T_B32); SRC(2, b, T_U32); SRC(3, c, T_U32); SRC(4, e, T_U32);
    return 0;
}

static int parse_vote(parser *ps, insn *x)
{
    static const char *const modes[] = {NULL, "all", "any", "uni", "ballot"};
    NEEDS(3, 3);
    if (!has(&x->md, "sync"))
        return REFUSE("'%s': vote without .sync is not supported (sm_70+)", x->opname);
    x->in.mode = (uint8_t)first_of(&x->md, modes, VOTE_BALLOT);
    if (!x->in.mode)
        return REFUSE("'%s' needs a mode", x->opname);
    DST(0, d); SRC(1, a, T_PRED); SRC(2, e, T_U32);
    if (x->ops[1].neg)
        x->in.neg |= 1;
    return 0;
}

static int parse_redux(parser *ps, insn *x)
{
    static const char *const ops[] = {NULL, "add", "min", "max", NULL, NULL, "and", "or", "xor"};
    NEEDS(3, 3);
    (void)has(&x->md, "sync");
    x->in.mode = (uint8_t)last_of(&x->md, ops, ATOM_XOR);
    if (!x->in.mode || x->ty == T_F32)
        return REFUSE("unsupported instruction '%s'", x->opname);
    DST(0, d); SRC(1, a, x->ty); SRC(2, e, T_U32);
    return 0;
}

static int parse_match(parser *ps, insn *x)
{
    static const char *const modes[] = {NULL, "any", "all"};
    NEEDS(3, 3);
    (void)has(&x->md, "sync");
    x->in.mode = (uint8_t)first_of(&x->md, modes, 2);
    if (!x->in.mode)
        return REFUSE("'%s' needs .any or .all", x->opname);
    DST(0, d);
    pair_dst(ps, x);
    SRC(1, a, x->ty); SRC(2, e, T_U32);
    return 0;
}

static int parse_activemask(parser *ps, insn *x)
{
    NEEDS(1, 1);
    DST(0, d);
    return 0;
}

/* One parenthesised list of a call: the caller's .param variables, whose
 * frame offsets are written to off (at most PTX_MAX_CALL_ARGS of them). */
static int parse_call_list(parser *ps, insn *x, uint32_t *off, uint32_t *size, int32_t *n)
{
    if (ptx_expect(ps, '('))
        return -1;
    *n = 0;
    while (!is_p(cur(ps), ')')) {
        tok *t = cur(ps);
        char nm[PTX_NAME_MAX];
        tokstr(t, nm, sizeof nm);
        if (t->kind != TK_ID)
            return REFUSE("call: expected a .param variable, not '%s'", nm);
        if (*n >= PTX_MAX_CALL_ARGS)
            return REFUSE("call: more than %d arguments or returns", PTX_MAX_CALL_ARGS);
        sym *s = ptx_find_sym(ps->fsyms, ps->nfsyms, nm);
        if (!s || s->kind != SYM_FPARAM)
            return REFUSE("call: '%s' is not a .param variable of the caller", nm);
        if (size)
            size[*n] = s->size;
        off[(*n)++] = (uint32_t)s->value;
        ps->i++;
        if (is_p(cur(ps), ','))
            ps->i++;
        else if (!is_p(cur(ps), ')'))
            return REFUSE("call: expected ',' or ')' in an argument list");
    }
    ps->i++;
    return 0;
}

/* call has its own operand syntax: [(rets),] name[, (args)];  It is parsed
 * before the generic operand list, and emits itself. */
static int parse_call(parser *ps, insn *x)
{
    pcall c;
    memset(&c, 0, sizeof c);
    if (is_p(cur(ps), '(')) {
        if (parse_call_list(ps, x, c.ret_off, c.ret_size, &c.nrets) || ptx_expect(ps, ','))
            return -1;
    }
    if (cur(ps)->kind != TK_ID)
        return REFUSE("call: expected a function name");
    char fname[PTX_NAME_MAX];
    tokstr(cur(ps), fname, sizeof fname);
    ps->i++;
    /* call [(rets),] %reg, [(args),] prototype: through a function address. */
    int indirect = fname[0] == '%';
    if (indirect) {
        uint32_t slot;
        if (!ptx_reg_lookup(ps, fname, &slot))
            return REFUSE("call: '%s' is not a register", fname);
        x->in.a = slot;
        x->in.op = OP_CALLI;
        x->in.target = -1;
    }
    if (is_p(cur(ps), ',') && is_p(peekn(ps, 1), '(')) {
        ps->i++;
        if (parse_call_list(ps, x, c.arg_off, NULL, &c.nargs))
            return -1;
    }
    if (is_p(cur(ps), ',') && indirect && peekn(ps, 1)->kind == TK_ID) {
        ps->i += 2; /* the .callprototype's label: the call site's own lists say the same */
    } else if (is_p(cur(ps), ',')) {
        return REFUSE(indirect ? "call: expected a .callprototype label"
                               : "call: a prototype list on a direct call");
    }
    if (ptx_expect(ps, ';'))
        return -1;
    for (int i = 0; i < x->md.n; i++)
        if (strcmp(x->md.m[i], "uni") != 0)
            return REFUSE("unsupported instruction '%s'", x->opname);
    pfunc *f = ps->f;
    if (!GROW(f->calls, f->ncalls, f->cap_calls))
        return ptx_nomem(ps);
    f->calls[f->ncalls] = c;
    x->in.aux = (int32_t)f->ncalls++;
    if (indirect)
        return ptx_emit(ps, &x->in);
    if (!GROW(ps->callfix, ps->ncallfix, ps->cap_callfix))
        return ptx_nomem(ps);
    ps->callfix[ps->ncallfix].func = ps->fidx;
    ps->callfix[ps->ncallfix].pc = f->ncode;
    ps->callfix[ps->ncallfix].line = x->line;
    snprintf(ps->callfix[ps->ncallfix].name, sizeof ps->callfix[0].name, "%s", fname);
    ps->ncallfix++;
    return ptx_emit(ps, &x->in);
}

/* ------------------------------------------------------------- dispatch */

typedef int (*family_fn)(parser *ps, insn *x);

static const struct mnemonic {
    const char *name;
    uint8_t op;       /* the row's operation: the handler's starting point */
    family_fn parse;
} g_mnemonics[] = {
#define PTX_OP(id, name, family, route) {name, OP_##id, parse_##family},
#define PTX_ALIAS(name, id, family) {name, OP_##id, parse_##family},
#include "ptx_opcodes.def"
};

static const struct mnemonic *find_mnemonic(const char *base)
{
    for (size_t k = 0; k < sizeof g_mnemonics / sizeof g_mnemonics[0]; k++)
        if (strcmp(base, g_mnemonics[k].name) == 0)
            return &g_mnemonics[k];
    return NULL;
}

/* The comma-separated operands up to the ';'. */
static int read_operands(parser *ps, insn *x)
{
    while (!is_p(cur(ps), ';')) {
        if (cur(ps)->kind == TK_EOF)
            return REFUSE("missing ';'");
        if (x->n >= 8)
            return REFUSE("too many operands");
        if (ptx_parse_operand(ps, &x->ops[x->n++]))
            return -1;
        if (is_p(cur(ps), ','))
            ps->i++;
        else if (!is_p(cur(ps), ';'))
            return REFUSE("expected ',' or ';' after an operand");
    }
    ps->i++;
    return 0;
}

/* What every family leaves to the end: modifiers nobody consumed, and the
 * type and rounding some operations cannot do without. */
static int finish(parser *ps, insn *x)
{
    const pinsn *in = &x->in;
    for (int i = 0; i < x->md.n; i++)
        if (!x->md.used[i] && !harmless(x->md.m[i]))
            return REFUSE("unsupported instruction '%s' (modifier .%s)", x->opname, x->md.m[i]);
    if (in->op == OP_SETP || in->op == OP_SET || in->op == OP_SELP || in->op == OP_MOV || in->op == OP_LD ||
        in->op == OP_ST) {
        if (!in->type)
            return REFUSE("'%s' needs a type", x->opname);
    }
    if ((in->op == OP_RCP || in->op == OP_SQRT || in->op == OP_DIV) &&
        (x->ty == T_F32 || x->ty == T_F64) && !in->mode && !(in->flags & FL_APPROX))
        return REFUSE("'%s' needs a rounding mode or .approx", x->opname);
    return ptx_emit(ps, in);
}

int ptx_parse_instruction(parser *ps, uint32_t guard, int guard_neg)
{
    insn x;
    memset(&x, 0, sizeof x);
    tok *t = cur(ps);
    x.line = t->line;
    tokstr(t, x.opname, sizeof x.opname);
    ps->i++;
    split_opcode(x.opname, &x.md);
    const struct mnemonic *mn = find_mnemonic(x.md.base);
    if (!mn || x.md.overflow)
        return ptx_fail(ps, x.line, PTX_ERR_INVALID, "unsupported instruction '%s'", x.opname);
    pinsn *in = &x.in;
    in->op = mn->op;
    in->guard = guard;
    in->guard_neg = (uint8_t)guard_neg;
    in->line = x.line;
    in->d = in->d2 = in->a = in->b = in->c = in->e = in->f = PTX_NONE;
    in->vec = 1;
    if (mn->parse == parse_call)
        return parse_call(ps, &x);
    if (read_operands(ps, &x))
        return -1;
    x.nt = types_of(&x.md, x.types, 3);
    x.ty = x.nt ? x.types[x.nt - 1] : 0;
    in->type = (uint8_t)x.ty;
    if (mn->parse(ps, &x) || x.rc)
        return -1;
    return finish(ps, &x);
}
