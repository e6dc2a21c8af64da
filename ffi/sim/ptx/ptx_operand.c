/* PTX operands -> register slots.
 *
 * Every value an instruction reads becomes a slot at load time: registers
 * by their declarations, special registers, immediates and symbol
 * addresses by constant slots of the function.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim_bits.h"
#include "ptx_parse.h"

/* ------------------------------------------------------------- types */

static const struct {
    const char *name;
    int type;
} g_types[] = {
    {"b8", T_B8},   {"b16", T_B16},   {"b32", T_B32},       {"b64", T_B64}, {"b128", T_B128},
    {"u8", T_U8},   {"u16", T_U16},   {"u32", T_U32},       {"u64", T_U64}, {"s8", T_S8},
    {"s16", T_S16}, {"s32", T_S32},   {"s64", T_S64},       {"f16", T_F16}, {"f16x2", T_F16X2},
    {"bf16", T_BF16}, {"bf16x2", T_BF16X2}, {"f32", T_F32}, {"f64", T_F64}, {"pred", T_PRED},
};

int ptx_type_named(const char *s)
{
    for (size_t i = 0; i < sizeof g_types / sizeof g_types[0]; i++)
        if (strcmp(s, g_types[i].name) == 0)
            return g_types[i].type;
    return 0;
}

/* ------------------------------------------------------------- slots */

uint32_t ptx_new_slots(parser *ps, uint32_t n)
{
    uint32_t s = ps->f->nslots;
    ps->f->nslots += n;
    return s;
}

/* A new constant slot holding v (0 when out of memory: the error is set). */
static uint32_t add_const(parser *ps, uint64_t v)
{
    pfunc *f = ps->f;
    if (!GROW(f->consts, f->nconsts, f->cap_consts)) {
        ptx_nomem(ps);
        return 0;
    }
    uint32_t s = ptx_new_slots(ps, 1);
    f->consts[f->nconsts].slot = s;
    f->consts[f->nconsts].value = v;
    f->nconsts++;
    return s;
}

uint32_t ptx_const_slot(parser *ps, uint64_t v)
{
    pfunc *f = ps->f;
    for (uint32_t i = 0; i < f->nconsts; i++)
        if (f->consts[i].value == v)
            return f->consts[i].slot;
    return add_const(ps, v);
}

/* A constant slot that gets the dynamic shared base added at the end. */
static uint32_t dyn_const_slot(parser *ps, uint64_t v)
{
    if (!GROW(ps->dyn, ps->ndyn, ps->cap_dyn)) {
        ptx_nomem(ps);
        return 0;
    }
    uint32_t cidx = ps->f->nconsts, s = add_const(ps, v);
    if (ps->err != PTX_OK)
        return 0;
    ps->dyn[ps->ndyn].func = ps->fidx;
    ps->dyn[ps->ndyn].cidx = cidx;
    ps->ndyn++;
    return s;
}

static uint32_t special_slot(parser *ps, uint32_t kind)
{
    pfunc *f = ps->f;
    for (uint32_t i = 0; i < f->nspecials; i++)
        if (f->specials[i].kind == kind)
            return f->specials[i].slot;
    pspecial *sp = realloc(f->specials, (f->nspecials + 1) * sizeof *sp);
    if (!sp) {
        ptx_nomem(ps);
        return 0;
    }
    f->specials = sp;
    uint32_t s = ptx_new_slots(ps, 1);
    sp[f->nspecials].slot = s;
    sp[f->nspecials].kind = kind;
    f->nspecials++;
    return s;
}

static const struct {
    const char *name;
    int kind;
} g_specials[] = {
    {"%tid.x", SP_TID_X},         {"%tid.y", SP_TID_Y},         {"%tid.z", SP_TID_Z},
    {"%ntid.x", SP_NTID_X},       {"%ntid.y", SP_NTID_Y},       {"%ntid.z", SP_NTID_Z},
    {"%ctaid.x", SP_CTAID_X},     {"%ctaid.y", SP_CTAID_Y},     {"%ctaid.z", SP_CTAID_Z},
    {"%nctaid.x", SP_NCTAID_X},   {"%nctaid.y", SP_NCTAID_Y},   {"%nctaid.z", SP_NCTAID_Z},
    {"%laneid", SP_LANEID},       {"%warpid", SP_WARPID},       {"%nwarpid", SP_NWARPID},
    {"%smid", SP_SMID},           {"%nsmid", SP_NSMID},         {"%gridid", SP_GRIDID},
    {"%lanemask_eq", SP_LANEMASK_EQ}, {"%lanemask_lt", SP_LANEMASK_LT},
    {"%lanemask_le", SP_LANEMASK_LE}, {"%lanemask_gt", SP_LANEMASK_GT},
    {"%lanemask_ge", SP_LANEMASK_GE}, {"%dynamic_smem_size", SP_DYN_SMEM},
    {"%total_smem_size", SP_TOTAL_SMEM},
};

/* ------------------------------------------------------------- symbols */

sym *ptx_find_sym(sym *tab, size_t n, const char *name)
{
    for (size_t i = n; i-- > 0;) /* latest wins: call scopes redeclare param0 */
        if (strcmp(tab[i].name, name) == 0)
            return &tab[i];
    return NULL;
}

sym *ptx_lookup(parser *ps, const char *name)
{
    sym *s = ps->f ? ptx_find_sym(ps->fsyms, ps->nfsyms, name) : NULL;
    return s ? s : ptx_find_sym(ps->msyms, ps->nmsyms, name);
}

int ptx_add_sym(parser *ps, int module, const char *name, int kind, uint64_t value,
                   uint32_t size)
{
    sym **tab = module ? &ps->msyms : &ps->fsyms;
    size_t *n = module ? &ps->nmsyms : &ps->nfsyms;
    size_t *cap = module ? &ps->cap_msyms : &ps->cap_fsyms;
    if (!GROW(*tab, *n, *cap))
        return ptx_nomem(ps);
    sym *s = &(*tab)[(*n)++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->kind = kind;
    s->value = value;
    s->size = size;
    return 0;
}

int ptx_reg_lookup(parser *ps, const char *name, uint32_t *slot)
{
    for (size_t i = ps->nregs; i-- > 0;) {
        regdecl *r = &ps->regs[i];
        if (r->count == 0) {
            if (strcmp(r->name, name) == 0) {
                *slot = r->base;
                return 1;
            }
            continue;
        }
        size_t pl = strlen(r->name);
        if (strncmp(name, r->name, pl) != 0 || !name[pl])
            continue;
        const char *d = name + pl;
        int ok = 1;
        for (const char *q = d; *q; q++)
            ok &= isdigit((unsigned char)*q) != 0;
        if (!ok || (d[0] == '0' && d[1]))
            continue;
        long idx = strtol(d, NULL, 10);
        if (idx >= 0 && idx < r->count) {
            *slot = r->base + (uint32_t)idx;
            return 1;
        }
    }
    return 0;
}

/* The slot holding the value of a name used as an operand: a register, a
 * special register, or a symbol's address in its state space. */
static int name_slot(parser *ps, const char *name, int line, uint32_t *slot)
{
    if (ptx_reg_lookup(ps, name, slot))
        return 0;
    for (size_t i = 0; i < sizeof g_specials / sizeof g_specials[0]; i++) {
        if (strcmp(name, g_specials[i].name) == 0) {
            *slot = special_slot(ps, (uint32_t)g_specials[i].kind);
            return 0;
        }
    }
    if (!strcmp(name, "WARP_SZ")) { /* PTX's one predefined constant: the warp's width */
        *slot = ptx_const_slot(ps, PTX_LANES);
        return 0;
    }
    if (!strncmp(name, "%clock", 6) || !strcmp(name, "%globaltimer"))
        return ptx_fail(ps, line, PTX_ERR_INVALID, "'%s' is only supported as mov's source", name);
    if (name[0] == '%' && (!strncmp(name, "%envreg", 7) || !strncmp(name, "%pm", 3) ||
                           !strncmp(name, "%cluster", 8) || !strncmp(name, "%nclusterid", 11) ||
                           !strncmp(name, "%clusterid", 10) || !strncmp(name, "%is_explicit", 12) ||
                           !strncmp(name, "%reserved", 9) || !strncmp(name, "%aggr", 5)))
        return ptx_fail(ps, line, PTX_ERR_INVALID, "unsupported special register '%s'", name);
    sym *s = ptx_lookup(ps, name);
    if (!s)
        return ptx_fail(ps, line, PTX_ERR_INVALID, "undeclared name '%s'", name);
    switch (s->kind) {
    case SYM_LOCAL:
        /* Frame-relative: the depot's base differs with the call depth. */
        if (s->value != 0)
            return ptx_fail(ps, line, PTX_ERR_INVALID, "several .local variables in one function");
        *slot = special_slot(ps, SP_LOCAL_BASE);
        return 0;
    case SYM_DYNSHARED:
        *slot = dyn_const_slot(ps, s->value);
        return 0;
    case SYM_FUNC:
        ps->m->funcs[s->value].address_taken = 1;
        *slot = ptx_const_slot(ps, PTX_FUNC_ADDR(s->value));
        return 0;
    default:
        *slot = ptx_const_slot(ps, s->value);
        return 0;
    }
}

/* ------------------------------------------------------------- operands */

int ptx_parse_number(parser *ps, int negate, opnd *o)
{
    tok *t = cur(ps);
    char buf[PTX_NAME_MAX];
    tokstr(t, buf, sizeof buf);
    ps->i++;
    if (buf[0] == '0' && (buf[1] == 'f' || buf[1] == 'F')) {
        o->kind = O_F32;
        o->bits = strtoull(buf + 2, NULL, 16);
        if (negate)
            o->bits ^= 0x80000000u;
        return 0;
    }
    if (buf[0] == '0' && (buf[1] == 'd' || buf[1] == 'D')) {
        o->kind = O_F64;
        o->bits = strtoull(buf + 2, NULL, 16);
        if (negate)
            o->bits ^= 0x8000000000000000ull;
        return 0;
    }
    if (strpbrk(buf, ".eE") && !(buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'))) {
        double d = strtod(buf, NULL);
        if (negate)
            d = -d;
        o->kind = O_F64;
        o->bits = sim_f64_bits(d);
        return 0;
    }
    char *end;
    uint64_t v = strtoull(buf, &end, 0);
    o->kind = O_INT;
    o->bits = negate ? (uint64_t)(-(int64_t)v) : v;
    return 0;
}

/* `{ x }`: one register or immediate (with its sign) between the braces. */
static int single_element(parser *ps)
{
    size_t k = is_p(peekn(ps, 1), '-') ? 2 : 1;
    tok *e = peekn(ps, k);
    return (e->kind == TK_ID || e->kind == TK_NUM) && is_p(peekn(ps, k + 1), '}');
}

/* A one-element vector brace is the scalar it holds, as ptxas reads it:
 * Triton's inline asm writes `ld.global.b32 { %r1 }, [ %rd1 + 0 ];`. */
static int scalar_in_braces(parser *ps, opnd *o)
{
    ps->i++; /* '{' */
    if (ptx_parse_operand(ps, o))
        return -1;
    return ptx_expect(ps, '}');
}

/* The braced coordinates of a tensor address, into o's vnames. */
static int tensor_coords(parser *ps, opnd *o)
{
    ps->i++;
    while (!is_p(cur(ps), '}')) {
        tok *t = cur(ps);
        if ((t->kind != TK_ID && t->kind != TK_NUM) || o->nv >= 5 || t->len >= PTX_VEC_NAME)
            return ptx_fail(ps, t->line, PTX_ERR_INVALID, "bad tensor coordinates");
        tokstr(t, o->vnames[o->nv++], sizeof o->vnames[0]);
        ps->i++;
        if (is_p(cur(ps), ','))
            ps->i++;
    }
    ps->i++;
    return 0;
}

int ptx_parse_operand(parser *ps, opnd *o)
{
    memset(o, 0, sizeof *o);
    tok *t = cur(ps);
    if (is_p(t, '[')) {
        ps->i++;
        o->kind = O_ADDR;
        int64_t off = 0;
        int sign = 1, any = 0;
        while (!is_p(cur(ps), ']')) {
            t = cur(ps);
            if (t->kind == TK_EOF || is_p(t, ';'))
                return ptx_fail(ps, t->line, PTX_ERR_INVALID, "unterminated address");
            if (is_p(t, '+')) {
                sign = 1;
                ps->i++;
            } else if (is_p(t, '-')) {
                sign = -1;
                ps->i++;
            } else if (t->kind == TK_ID) {
                if (o->name[0])
                    return ptx_fail(ps, t->line, PTX_ERR_INVALID, "address with two names");
                tokstr(t, o->name, sizeof o->name);
                ps->i++;
                any = 1;
            } else if (is_p(t, ',') && o->name[0] && !o->nv && is_p(peekn(ps, 1), '{')) {
                ps->i++; /* a tensor's coordinates: [tensor-map, {c0, ...}] */
                if (tensor_coords(ps, o))
                    return -1;
            } else if (t->kind == TK_NUM) {
                uint64_t v;
                if (ptx_parse_uint(t, &v) != 0)
                    return ptx_fail(ps, t->line, PTX_ERR_INVALID, "bad address offset");
                off += sign * (int64_t)v;
                ps->i++;
                any = 1;
            } else {
                char s[32];
                tokstr(t, s, sizeof s);
                return ptx_fail(ps, t->line, PTX_ERR_INVALID, "unexpected '%s' in an address", s);
            }
        }
        ps->i++;
        if (!any)
            return ptx_fail(ps, t->line, PTX_ERR_INVALID, "empty address");
        o->bits = (uint64_t)off;
        return 0;
    }
    if (is_p(t, '{') && single_element(ps))
        return scalar_in_braces(ps, o);
    if (is_p(t, '{') || is_p(t, '(')) {
        char close = is_p(t, '{') ? '}' : ')';
        o->kind = is_p(t, '{') ? O_VEC : O_LIST;
        ps->i++;
        while (!is_p(cur(ps), close)) {
            t = cur(ps);
            if (t->kind != TK_ID && t->kind != TK_NUM)
                return ptx_fail(ps, t->line, PTX_ERR_INVALID, "expected a register in a vector");
            if (o->nv >= PTX_VEC_MAX && o->kind == O_VEC)
                return ptx_fail(ps, t->line, PTX_ERR_INVALID, "vector of more than %d elements",
                                PTX_VEC_MAX);
            if (o->nv >= 4 && o->kind == O_LIST)
                return ptx_fail(ps, t->line, PTX_ERR_INVALID, "more than 4 call arguments");
            if (t->len >= PTX_VEC_NAME)
                return ptx_fail(ps, t->line, PTX_ERR_INVALID, "a name in a vector of over %d "
                                "characters", PTX_VEC_NAME - 1);
            tokstr(t, o->vnames[o->nv++], sizeof o->vnames[0]);
            ps->i++;
            if (is_p(cur(ps), ','))
                ps->i++;
        }
        ps->i++;
        return 0;
    }
    if (is_p(t, '!')) {
        o->neg = 1;
        ps->i++;
        t = cur(ps);
    }
    if (is_p(t, '-') && peekn(ps, 1)->kind == TK_NUM) {
        ps->i++;
        return ptx_parse_number(ps, 1, o);
    }
    if (t->kind == TK_NUM)
        return ptx_parse_number(ps, 0, o);
    if (t->kind == TK_ID) {
        tokstr(t, o->name, sizeof o->name);
        ps->i++;
        o->kind = strcmp(o->name, "_") == 0 ? O_SINK : O_NAME;
        if (is_p(cur(ps), '|')) {
            ps->i++;
            if (cur(ps)->kind != TK_ID)
                return ptx_fail(ps, cur(ps)->line, PTX_ERR_INVALID, "expected a predicate after '|'");
            tokstr(cur(ps), o->pair, sizeof o->pair);
            ps->i++;
        }
        return 0;
    }
    char s[32];
    tokstr(t, s, sizeof s);
    return ptx_fail(ps, t->line, PTX_ERR_INVALID, "unexpected '%s'", s);
}

int ptx_is_float_type(int t) { return t == T_F32 || t == T_F64 || t == T_F16 || t == T_BF16; }

/* The value of an immediate as an operand of the given type. */
uint64_t ptx_imm_value(const opnd *o, int type)
{
    if (o->kind == O_F32) {
        if (type == T_F64) {
            return sim_f64_bits((double)sim_f32(o->bits));
        }
        return o->bits;
    }
    if (o->kind == O_F64) {
        if (type == T_F32) {
            return sim_f32_bits((float)sim_f64(o->bits));
        }
        return o->bits;
    }
    /* integer literal */
    if (type == T_F32)
        return sim_f32_bits((float)(int64_t)o->bits);
    if (type == T_F64)
        return sim_f64_bits((double)(int64_t)o->bits);
    return o->bits;
}

/* A source operand's slot. */
int ptx_src_slot(parser *ps, const opnd *o, int type, int line, uint32_t *slot)
{
    switch (o->kind) {
    case O_NAME:
        return name_slot(ps, o->name, line, slot);
    case O_INT:
    case O_F32:
    case O_F64:
        *slot = ptx_const_slot(ps, ptx_imm_value(o, type));
        return 0;
    default:
        return ptx_fail(ps, line, PTX_ERR_INVALID, "expected a register or an immediate");
    }
}

int ptx_dst_slot(parser *ps, const opnd *o, int line, uint32_t *slot)
{
    if (o->kind == O_SINK) {
        *slot = ptx_new_slots(ps, 1); /* a scratch slot nobody reads */
        return 0;
    }
    if (o->kind == O_VEC)
        return ptx_fail(ps, line, PTX_ERR_INVALID,
                        "destination is a vector of %d where one register goes", o->nv);
    if (o->kind != O_NAME || !ptx_reg_lookup(ps, o->name, slot))
        return ptx_fail(ps, line, PTX_ERR_INVALID, "destination '%s' is not a register",
                    o->kind == O_NAME ? o->name : "?");
    return 0;
}

int ptx_vec_slots(parser *ps, const opnd *o, int type, int line, int dst, uint32_t *slots)
{
    for (int k = 0; k < o->nv; k++) {
        opnd e;
        memset(&e, 0, sizeof e);
        snprintf(e.name, sizeof e.name, "%s", o->vnames[k]);
        e.kind = strcmp(e.name, "_") == 0 ? O_SINK : O_NAME;
        if (e.kind == O_NAME && isdigit((unsigned char)e.name[0])) {
            e.kind = O_INT;
            e.bits = strtoull(e.name, NULL, 0);
        }
        int r = dst ? ptx_dst_slot(ps, &e, line, &slots[k]) : ptx_src_slot(ps, &e, type, line, &slots[k]);
        if (r)
            return r;
    }
    return 0;
}

/* An address operand: base slot (a constant for a symbol) plus offset. */
int ptx_addr_operand(parser *ps, const opnd *o, int line, pinsn *in)
{
    if (o->kind != O_ADDR)
        return ptx_fail(ps, line, PTX_ERR_INVALID, "expected an address in [ ]");
    if (o->nv)
        return ptx_fail(ps, line, PTX_ERR_INVALID, "unexpected tensor coordinates");
    in->imm = (int64_t)o->bits;
    if (!o->name[0]) {
        in->a = ptx_const_slot(ps, 0);
        return 0;
    }
    return name_slot(ps, o->name, line, &in->a);
}
