/* One instruction while the parser decodes it: shared by the parse handlers
 * of ptx_insn.c (the dispatch and most families) and ptx_insn_matrix.c
 * (warp-level matrix and asynchronous-copy families).
 */
#ifndef CUSIM_PTX_INSN_H
#define CUSIM_PTX_INSN_H

#include <stdio.h>

#include "ptx_parse.h"

typedef struct mods {
    char base[32];
    char m[12][40];
    int n;
    int used[12];
    int overflow; /* a part too long, or too many: refused, never cut */
} mods;

static inline int has(mods *md, const char *s)
{
    for (int i = 0; i < md->n; i++)
        if (strcmp(md->m[i], s) == 0) {
            md->used[i] = 1;
            return 1;
        }
    return 0;
}

static inline int space_of(mods *md)
{
    static const struct { const char *n; int s; } sp[] = {
        {"global", S_GLOBAL}, {"shared", S_SHARED}, {"shared::cta", S_SHARED},
        {"local", S_LOCAL}, {"param", S_PARAM}, {"const", S_CONST},
    };
    for (size_t k = 0; k < sizeof sp / sizeof sp[0]; k++)
        if (has(md, sp[k].n))
            return sp[k].s;
    return S_GENERIC;
}

static inline int nops_check(parser *ps, int line, const char *op, int n, int want_min, int want_max)
{
    if (n < want_min || n > want_max)
        return ptx_fail(ps, line, PTX_ERR_INVALID, "'%s' takes %d operand(s), found %d", op,
                    want_min, n);
    return 0;
}


/* One instruction while its family handler decodes it. */
typedef struct insn {
    pinsn in;
    mods md;
    opnd ops[8];
    int n;          /* operands read */
    int types[3];   /* the type modifiers, in order */
    int nt, ty;     /* how many; the last one (the operation's type) */
    int line;
    int rc;         /* the first slot error: the operand chain stops there */
    char opname[PTX_NAME_MAX];
} insn;

#define SRC(k, field, type)                                                                       \
    (x->rc = x->rc ? x->rc : ptx_src_slot(ps, &x->ops[k], (type), x->line, &x->in.field))
#define DST(k, field) (x->rc = x->rc ? x->rc : ptx_dst_slot(ps, &x->ops[k], x->line, &x->in.field))
#define NEEDS(lo, hi)                                                                             \
    do {                                                                                          \
        if (nops_check(ps, x->line, x->opname, x->n, (lo), (hi)))                                 \
            return -1;                                                                            \
    } while (0)
#define BASE_IS(s) (strcmp(x->md.base, (s)) == 0)
#define REFUSE(...) ptx_fail(ps, x->line, PTX_ERR_INVALID, __VA_ARGS__)

/* Marks every modifier read: the matrix handlers match the whole spelling. */
static inline void take_all(insn *x)
{
    for (int i = 0; i < x->md.n; i++)
        x->md.used[i] = 1;
}

/* ptx_insn_matrix.c: the families of ptx_opcodes.def defined there. */
/* ldmatrix's and stmatrix's shared form (.sync.aligned.m8n8.{x1,x2,x4}
 * [.trans], .shared or generic, .b16): sets in.mode, in.space and in.vec;
 * the matrix count, or 0 for a form neither takes.  Here, not in one of
 * their files: those two already call each other's way round. */
static inline int m8n8_matrices(insn *x)
{
    int num = has(&x->md, "x1") ? 1 : has(&x->md, "x2") ? 2 : has(&x->md, "x4") ? 4 : 0;
    x->in.mode = (uint8_t)has(&x->md, "trans");
    x->in.space = (uint8_t)space_of(&x->md);
    if (!has(&x->md, "sync") || !has(&x->md, "aligned") || !has(&x->md, "m8n8") || !num ||
        x->ty != T_B16 || x->nt != 1 || (x->in.space != S_SHARED && x->in.space != S_GENERIC))
        return 0;
    x->in.vec = (uint8_t)num;
    return num;
}

/* The two addresses of an asynchronous copy (cp.async, cp.async.bulk):
 * the destination, operand dst, decoded into in as usual; the source,
 * operand src, kept as in.b (its register) and in.aux (its offset). */
static inline int copy_addresses(parser *ps, insn *x, int dst, int src)
{
    pinsn from = x->in;
    if (ptx_addr_operand(ps, &x->ops[src], x->line, &from) ||
        ptx_addr_operand(ps, &x->ops[dst], x->line, &x->in))
        return -1;
    if (from.imm != (int32_t)from.imm)
        return REFUSE("'%s': source offset out of range", x->opname);
    x->in.b = from.a;
    x->in.aux = (int32_t)from.imm;
    return 0;
}

PTX_HIDDEN int parse_ldmatrix(parser *ps, insn *x);
PTX_HIDDEN int parse_mma(parser *ps, insn *x);
PTX_HIDDEN int parse_cp(parser *ps, insn *x);
PTX_HIDDEN int parse_wmma(parser *ps, insn *x);
PTX_HIDDEN int parse_wgmma(parser *ps, insn *x);
/* ptx_insn_async.c */
PTX_HIDDEN int parse_mbarrier(parser *ps, insn *x);
PTX_HIDDEN int parse_bulk(parser *ps, insn *x); /* cp.async.bulk*, from parse_cp */
PTX_HIDDEN int parse_tensormap(parser *ps, insn *x);
PTX_HIDDEN int parse_elect(parser *ps, insn *x);
PTX_HIDDEN int parse_setmaxnreg(parser *ps, insn *x);
PTX_HIDDEN int parse_stmatrix(parser *ps, insn *x);

#endif /* CUSIM_PTX_INSN_H */
