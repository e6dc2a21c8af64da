/* PTX text -> decoded program (ptx_internal.h).
 *
 * A hand-written tokenizer and a statement parser for the PTX that nvcc and
 * NVRTC write: module directives, .entry/.func bodies, register and variable
 * declarations, labels and instructions.  Everything is resolved here, once:
 * register names to slots, labels to instruction indices, symbols to
 * addresses, immediates to constant slots.  Whatever is not understood stops
 * the load with a message naming the line and the construct; nothing is
 * skipped silently.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* The newest PTX ISA and target the executor knows. */
#define PTX_MAX_MAJOR 9
#define PTX_MAX_MINOR 5
#define PTX_MAX_SM 90

/* ------------------------------------------------------------- tokens */

enum { TK_EOF = 0, TK_ID, TK_NUM, TK_STR, TK_PUNCT };

typedef struct tok {
    int kind;
    int line;
    const char *s;
    int len;
} tok;

typedef struct lexer {
    tok *t;
    size_t n, cap;
} lexer;

static int id_start(int c) { return isalpha(c) || c == '_' || c == '$' || c == '%' || c == '.'; }
static int id_char(int c) { return isalnum(c) || c == '_' || c == '$' || c == '.'; }

static int lex(const char *src, lexer *lx)
{
    int line = 1;
    const char *p = src;
    for (;;) {
        while (*p && isspace((unsigned char)*p)) {
            if (*p == '\n')
                line++;
            p++;
        }
        if (!*p)
            break;
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n')
                p++;
            continue;
        }
        if (p[0] == '/' && p[1] == '*') {
            p += 2;
            while (*p && !(p[0] == '*' && p[1] == '/')) {
                if (*p == '\n')
                    line++;
                p++;
            }
            if (*p)
                p += 2;
            continue;
        }
        if (lx->n + 1 >= lx->cap) {
            size_t cap = lx->cap ? lx->cap * 2 : 4096;
            tok *t = realloc(lx->t, cap * sizeof *t);
            if (!t)
                return -1;
            lx->t = t;
            lx->cap = cap;
        }
        tok *t = &lx->t[lx->n++];
        t->line = line;
        t->s = p;
        unsigned char c = (unsigned char)*p;
        if (id_start(c)) {
            p++;
            for (;;) {
                if (id_char((unsigned char)*p))
                    p++;
                else if (p[0] == ':' && p[1] == ':' && id_char((unsigned char)p[2]))
                    p += 2; /* ld.global.L1::evict_last */
                else
                    break;
            }
            t->kind = TK_ID;
        } else if (isdigit(c)) {
            if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X' || p[1] == 'f' || p[1] == 'F' ||
                                p[1] == 'd' || p[1] == 'D')) {
                p += 2;
                while (isxdigit((unsigned char)*p))
                    p++;
            } else {
                while (isdigit((unsigned char)*p) || *p == '.' ||
                       ((*p == 'e' || *p == 'E') && (isdigit((unsigned char)p[1]) || p[1] == '-' || p[1] == '+')) ||
                       ((*p == '-' || *p == '+') && (p[-1] == 'e' || p[-1] == 'E')))
                    p++;
            }
            if (*p == 'U' || *p == 'u')
                p++;
            t->kind = TK_NUM;
        } else if (c == '"') {
            p++;
            while (*p && *p != '"' && *p != '\n')
                p++;
            if (*p == '"')
                p++;
            t->kind = TK_STR;
        } else {
            p++;
            t->kind = TK_PUNCT;
        }
        t->len = (int)(p - t->s);
    }
    lx->t[lx->n].kind = TK_EOF;
    lx->t[lx->n].line = line;
    lx->t[lx->n].s = p;
    lx->t[lx->n].len = 0;
    return 0;
}

/* ------------------------------------------------------------- parser state */

typedef struct regdecl {
    char name[128];
    int count; /* %r<N>: N names %r0..%r(N-1); 0: exactly name */
    uint32_t base;
    int type;
} regdecl;

enum { SYM_KPARAM = 1, SYM_FPARAM, SYM_SHARED, SYM_DYNSHARED, SYM_LOCAL, SYM_VAR, SYM_FUNC };

typedef struct sym {
    char name[128];
    int kind;
    uint64_t value; /* offset or address or function index */
    uint32_t size;
} sym;

typedef struct fixup {
    int32_t pc;
    char label[128];
    int line;
} fixup;

typedef struct dynfix {
    uint32_t func, cidx;
} dynfix;

typedef struct parser {
    lexer lx;
    size_t i;
    pmodule *m;
    char *log;
    size_t log_size;
    ptx_status err;
    int sm;
    /* module symbols */
    sym *msyms;
    size_t nmsyms, cap_msyms;
    /* the function being parsed */
    pfunc *f;
    uint32_t fidx;
    regdecl *regs;
    size_t nregs, cap_regs;
    sym *fsyms;
    size_t nfsyms, cap_fsyms;
    sym *labels;
    size_t nlabels, cap_labels;
    fixup *fix;
    size_t nfix, cap_fix;
    /* calls to resolve once every function is known */
    struct { uint32_t func; int32_t pc; char name[128]; int line; } *callfix;
    size_t ncallfix, cap_callfix;
    dynfix *dyn;
    size_t ndyn, cap_dyn;
    uint32_t shared_pool;
} parser;

#define GROW(arr, n, cap)                                                                         \
    ((n) < (cap) ? 1                                                                              \
                 : ((cap) = (cap) ? (cap) * 2 : 16,                                               \
                    (arr) = realloc((arr), (cap) * sizeof *(arr)), (arr) != NULL))

static int fail(parser *ps, int line, ptx_status st, const char *fmt, ...)
{
    if (ps->err != PTX_OK)
        return -1;
    ps->err = st;
    if (ps->log && ps->log_size) {
        int n = snprintf(ps->log, ps->log_size, "ptx line %d: ", line);
        if (n < 0)
            n = 0;
        if ((size_t)n < ps->log_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(ps->log + n, ps->log_size - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static int nomem(parser *ps) { return fail(ps, 0, PTX_ERR_OUT_OF_MEMORY, "out of memory"); }

static tok *cur(parser *ps) { return &ps->lx.t[ps->i]; }
static tok *peekn(parser *ps, size_t k)
{
    size_t j = ps->i + k;
    return j <= ps->lx.n ? &ps->lx.t[j] : &ps->lx.t[ps->lx.n];
}
static int is_p(tok *t, char c) { return t->kind == TK_PUNCT && t->s[0] == c; }
static int is_id(tok *t, const char *s)
{
    return t->kind == TK_ID && (int)strlen(s) == t->len && memcmp(t->s, s, (size_t)t->len) == 0;
}
static void tokstr(tok *t, char *buf, size_t n)
{
    size_t len = (size_t)t->len < n - 1 ? (size_t)t->len : n - 1;
    memcpy(buf, t->s, len);
    buf[len] = 0;
}
static int expect(parser *ps, char c)
{
    if (!is_p(cur(ps), c)) {
        char got[64];
        tokstr(cur(ps), got, sizeof got);
        return fail(ps, cur(ps)->line, PTX_ERR_INVALID, "expected '%c', found '%s'", c,
                    cur(ps)->kind == TK_EOF ? "end of text" : got);
    }
    ps->i++;
    return 0;
}
static void skip_statement(parser *ps)
{
    while (cur(ps)->kind != TK_EOF && !is_p(cur(ps), ';'))
        ps->i++;
    if (is_p(cur(ps), ';'))
        ps->i++;
}

static int parse_uint(tok *t, uint64_t *out)
{
    if (t->kind != TK_NUM)
        return -1;
    char buf[64];
    tokstr(t, buf, sizeof buf);
    char *end;
    *out = strtoull(buf, &end, 0);
    if (*end == 'U' || *end == 'u')
        end++;
    return *end ? -1 : 0;
}

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

static int type_named(const char *s)
{
    for (size_t i = 0; i < sizeof g_types / sizeof g_types[0]; i++)
        if (strcmp(s, g_types[i].name) == 0)
            return g_types[i].type;
    return 0;
}

/* ------------------------------------------------------------- slots */

static uint32_t new_slots(parser *ps, uint32_t n)
{
    uint32_t s = ps->f->nslots;
    ps->f->nslots += n;
    return s;
}

static uint32_t const_slot(parser *ps, uint64_t v)
{
    pfunc *f = ps->f;
    for (uint32_t i = 0; i < f->nconsts; i++)
        if (f->consts[i].value == v)
            return f->consts[i].slot;
    if (!GROW(f->consts, f->nconsts, f->cap_consts)) {
        nomem(ps);
        return 0;
    }
    uint32_t s = new_slots(ps, 1);
    f->consts[f->nconsts].slot = s;
    f->consts[f->nconsts].value = v;
    f->nconsts++;
    return s;
}

/* A constant slot that gets the dynamic shared base added at the end. */
static uint32_t dyn_const_slot(parser *ps, uint64_t v)
{
    pfunc *f = ps->f;
    if (!GROW(f->consts, f->nconsts, f->cap_consts) || !GROW(ps->dyn, ps->ndyn, ps->cap_dyn)) {
        nomem(ps);
        return 0;
    }
    uint32_t s = new_slots(ps, 1);
    f->consts[f->nconsts].slot = s;
    f->consts[f->nconsts].value = v;
    ps->dyn[ps->ndyn].func = ps->fidx;
    ps->dyn[ps->ndyn].cidx = f->nconsts;
    ps->ndyn++;
    f->nconsts++;
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
        nomem(ps);
        return 0;
    }
    f->specials = sp;
    uint32_t s = new_slots(ps, 1);
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

static sym *find_sym(sym *tab, size_t n, const char *name)
{
    for (size_t i = n; i-- > 0;) /* latest wins: call scopes redeclare param0 */
        if (strcmp(tab[i].name, name) == 0)
            return &tab[i];
    return NULL;
}

static sym *lookup(parser *ps, const char *name)
{
    sym *s = ps->f ? find_sym(ps->fsyms, ps->nfsyms, name) : NULL;
    return s ? s : find_sym(ps->msyms, ps->nmsyms, name);
}

static int add_sym(parser *ps, int module, const char *name, int kind, uint64_t value,
                   uint32_t size)
{
    sym **tab = module ? &ps->msyms : &ps->fsyms;
    size_t *n = module ? &ps->nmsyms : &ps->nfsyms;
    size_t *cap = module ? &ps->cap_msyms : &ps->cap_fsyms;
    if (!GROW(*tab, *n, *cap))
        return nomem(ps);
    sym *s = &(*tab)[(*n)++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->kind = kind;
    s->value = value;
    s->size = size;
    return 0;
}

static int reg_lookup(parser *ps, const char *name, uint32_t *slot)
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
    if (reg_lookup(ps, name, slot))
        return 0;
    for (size_t i = 0; i < sizeof g_specials / sizeof g_specials[0]; i++) {
        if (strcmp(name, g_specials[i].name) == 0) {
            *slot = special_slot(ps, (uint32_t)g_specials[i].kind);
            return 0;
        }
    }
    if (!strncmp(name, "%clock", 6) || !strcmp(name, "%globaltimer"))
        return fail(ps, line, PTX_ERR_INVALID, "'%s' is only supported as mov's source", name);
    if (name[0] == '%' && (!strncmp(name, "%envreg", 7) || !strncmp(name, "%pm", 3) ||
                           !strncmp(name, "%cluster", 8) || !strncmp(name, "%nclusterid", 11) ||
                           !strncmp(name, "%clusterid", 10) || !strncmp(name, "%is_explicit", 12) ||
                           !strncmp(name, "%reserved", 9) || !strncmp(name, "%aggr", 5)))
        return fail(ps, line, PTX_ERR_INVALID, "unsupported special register '%s'", name);
    sym *s = lookup(ps, name);
    if (!s)
        return fail(ps, line, PTX_ERR_INVALID, "undeclared name '%s'", name);
    switch (s->kind) {
    case SYM_LOCAL:
        /* Frame-relative: the depot's base differs with the call depth. */
        if (s->value != 0)
            return fail(ps, line, PTX_ERR_INVALID, "several .local variables in one function");
        *slot = special_slot(ps, SP_LOCAL_BASE);
        return 0;
    case SYM_DYNSHARED:
        *slot = dyn_const_slot(ps, s->value);
        return 0;
    case SYM_FUNC:
        return fail(ps, line, PTX_ERR_INVALID, "function address '%s' (indirect calls are not supported)", name);
    default:
        *slot = const_slot(ps, s->value);
        return 0;
    }
}

/* ------------------------------------------------------------- operands */

enum { O_NAME = 1, O_INT, O_F32, O_F64, O_ADDR, O_VEC, O_SINK, O_LIST };

typedef struct opnd {
    int kind;
    int neg;        /* !%p */
    char name[128]; /* O_NAME; O_ADDR base name ("" if none) */
    uint64_t bits;  /* O_INT value, O_F32/O_F64 bits, O_ADDR offset */
    char vnames[4][64]; /* O_VEC / O_LIST elements; "_" = sink */
    int nv;
    char pair[64];  /* p|q: q */
} opnd;

static int parse_number(parser *ps, int negate, opnd *o)
{
    tok *t = cur(ps);
    char buf[64];
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
        memcpy(&o->bits, &d, 8);
        return 0;
    }
    char *end;
    uint64_t v = strtoull(buf, &end, 0);
    o->kind = O_INT;
    o->bits = negate ? (uint64_t)(-(int64_t)v) : v;
    return 0;
}

static int parse_operand(parser *ps, opnd *o)
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
                return fail(ps, t->line, PTX_ERR_INVALID, "unterminated address");
            if (is_p(t, '+')) {
                sign = 1;
                ps->i++;
            } else if (is_p(t, '-')) {
                sign = -1;
                ps->i++;
            } else if (t->kind == TK_ID) {
                if (o->name[0])
                    return fail(ps, t->line, PTX_ERR_INVALID, "address with two names");
                tokstr(t, o->name, sizeof o->name);
                ps->i++;
                any = 1;
            } else if (t->kind == TK_NUM) {
                uint64_t v;
                if (parse_uint(t, &v) != 0)
                    return fail(ps, t->line, PTX_ERR_INVALID, "bad address offset");
                off += sign * (int64_t)v;
                ps->i++;
                any = 1;
            } else {
                char s[32];
                tokstr(t, s, sizeof s);
                return fail(ps, t->line, PTX_ERR_INVALID, "unexpected '%s' in an address", s);
            }
        }
        ps->i++;
        if (!any)
            return fail(ps, t->line, PTX_ERR_INVALID, "empty address");
        o->bits = (uint64_t)off;
        return 0;
    }
    if (is_p(t, '{') || is_p(t, '(')) {
        char close = is_p(t, '{') ? '}' : ')';
        o->kind = is_p(t, '{') ? O_VEC : O_LIST;
        ps->i++;
        while (!is_p(cur(ps), close)) {
            t = cur(ps);
            if (t->kind != TK_ID && t->kind != TK_NUM)
                return fail(ps, t->line, PTX_ERR_INVALID, "expected a register in a vector");
            if (o->nv >= 4 && o->kind == O_VEC)
                return fail(ps, t->line, PTX_ERR_INVALID, "vector of more than 4 elements");
            if (o->nv >= 4)
                return fail(ps, t->line, PTX_ERR_INVALID, "more than 4 call arguments");
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
        return parse_number(ps, 1, o);
    }
    if (t->kind == TK_NUM)
        return parse_number(ps, 0, o);
    if (t->kind == TK_ID) {
        tokstr(t, o->name, sizeof o->name);
        ps->i++;
        o->kind = strcmp(o->name, "_") == 0 ? O_SINK : O_NAME;
        if (is_p(cur(ps), '|')) {
            ps->i++;
            if (cur(ps)->kind != TK_ID)
                return fail(ps, cur(ps)->line, PTX_ERR_INVALID, "expected a predicate after '|'");
            tokstr(cur(ps), o->pair, sizeof o->pair);
            ps->i++;
        }
        return 0;
    }
    char s[32];
    tokstr(t, s, sizeof s);
    return fail(ps, t->line, PTX_ERR_INVALID, "unexpected '%s'", s);
}

static int is_float_type(int t) { return t == T_F32 || t == T_F64 || t == T_F16 || t == T_BF16; }

static uint64_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* The value of an immediate as an operand of the given type. */
static uint64_t imm_value(const opnd *o, int type)
{
    if (o->kind == O_F32) {
        if (type == T_F64) {
            uint32_t u = (uint32_t)o->bits;
            float f;
            memcpy(&f, &u, 4);
            double d = f;
            uint64_t b;
            memcpy(&b, &d, 8);
            return b;
        }
        return o->bits;
    }
    if (o->kind == O_F64) {
        if (type == T_F32) {
            double d;
            memcpy(&d, &o->bits, 8);
            return f32_bits((float)d);
        }
        return o->bits;
    }
    /* integer literal */
    if (type == T_F32)
        return f32_bits((float)(int64_t)o->bits);
    if (type == T_F64) {
        double d = (double)(int64_t)o->bits;
        uint64_t b;
        memcpy(&b, &d, 8);
        return b;
    }
    return o->bits;
}

/* A source operand's slot. */
static int src_slot(parser *ps, const opnd *o, int type, int line, uint32_t *slot)
{
    switch (o->kind) {
    case O_NAME:
        return name_slot(ps, o->name, line, slot);
    case O_INT:
    case O_F32:
    case O_F64:
        *slot = const_slot(ps, imm_value(o, type));
        return 0;
    default:
        return fail(ps, line, PTX_ERR_INVALID, "expected a register or an immediate");
    }
}

static int dst_slot(parser *ps, const opnd *o, int line, uint32_t *slot)
{
    if (o->kind == O_SINK) {
        *slot = new_slots(ps, 1); /* a scratch slot nobody reads */
        return 0;
    }
    if (o->kind != O_NAME || !reg_lookup(ps, o->name, slot))
        return fail(ps, line, PTX_ERR_INVALID, "destination '%s' is not a register",
                    o->kind == O_NAME ? o->name : "?");
    return 0;
}

static int vec_slots(parser *ps, const opnd *o, int type, int line, int dst, uint32_t *slots)
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
        int r = dst ? dst_slot(ps, &e, line, &slots[k]) : src_slot(ps, &e, type, line, &slots[k]);
        if (r)
            return r;
    }
    return 0;
}

/* An address operand: base slot (a constant for a symbol) plus offset. */
static int addr_operand(parser *ps, const opnd *o, int line, pinsn *in)
{
    if (o->kind != O_ADDR)
        return fail(ps, line, PTX_ERR_INVALID, "expected an address in [ ]");
    in->imm = (int64_t)o->bits;
    if (!o->name[0]) {
        in->a = const_slot(ps, 0);
        return 0;
    }
    return name_slot(ps, o->name, line, &in->a);
}

/* ------------------------------------------------------------- instructions */

typedef struct mods {
    char base[32];
    char m[12][40];
    int n;
    int used[12];
} mods;

static void split_opcode(const char *op, mods *md)
{
    memset(md, 0, sizeof *md);
    const char *p = op, *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    snprintf(md->base, sizeof md->base, "%.*s", (int)len, p);
    while (dot && md->n < 12) {
        p = dot + 1;
        dot = strchr(p, '.');
        len = dot ? (size_t)(dot - p) : strlen(p);
        snprintf(md->m[md->n++], sizeof md->m[0], "%.*s", (int)len, p);
    }
}

static int has(mods *md, const char *s)
{
    for (int i = 0; i < md->n; i++)
        if (strcmp(md->m[i], s) == 0) {
            md->used[i] = 1;
            return 1;
        }
    return 0;
}

/* The types among the modifiers, in order. */
static int types_of(mods *md, int *types, int max)
{
    int n = 0;
    for (int i = 0; i < md->n; i++) {
        int t = type_named(md->m[i]);
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

static int space_of(mods *md)
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

static int emit(parser *ps, const pinsn *in)
{
    pfunc *f = ps->f;
    if (!GROW(f->code, f->ncode, f->cap_code))
        return nomem(ps);
    f->code[f->ncode++] = *in;
    return 0;
}

static int nops_check(parser *ps, int line, const char *op, int n, int want_min, int want_max)
{
    if (n < want_min || n > want_max)
        return fail(ps, line, PTX_ERR_INVALID, "'%s' takes %d operand(s), found %d", op,
                    want_min, n);
    return 0;
}

static int parse_instruction(parser *ps, uint32_t guard, int guard_neg)
{
    tok *t = cur(ps);
    int line = t->line;
    char opname[160];
    tokstr(t, opname, sizeof opname);
    ps->i++;
    mods md;
    split_opcode(opname, &md);
    const char *b = md.base;
    pinsn in;
    memset(&in, 0, sizeof in);
    in.guard = guard;
    in.guard_neg = (uint8_t)guard_neg;
    in.line = line;
    in.d = in.d2 = in.a = in.b = in.c = in.e = PTX_NONE;
    in.vec = 1;

    static const char *const known[] = {
        "mov", "ld", "ldu", "st", "cvta", "cvt", "add", "sub", "mul", "div", "rem", "min", "max",
        "and", "or", "xor", "shl", "shr", "copysign", "addc", "subc", "mul24", "fns", "mad", "fma",
        "mad24", "sad", "madc", "abs", "neg", "not", "cnot", "popc", "clz", "brev", "rcp", "sqrt",
        "rsqrt", "sin", "cos", "lg2", "ex2", "tanh", "bfind", "bfe", "bfi", "prmt", "shf", "lop3",
        "setp", "selp", "testp", "bra", "ret", "exit", "trap", "brkpt", "bar", "barrier", "membar",
        "fence", "prefetch", "prefetchu", "nanosleep", "pmevent", "atom", "red", "shfl", "vote",
        "activemask", "redux", "match", "call", NULL,
    };
    int is_known = 0;
    for (int k = 0; known[k] && !is_known; k++)
        is_known = strcmp(b, known[k]) == 0;
    if (!is_known)
        return fail(ps, line, PTX_ERR_INVALID, "unsupported instruction '%s'", opname);

    /* call has its own operand syntax */
    opnd ops[8];
    int n = 0;
    if (strcmp(b, "call") == 0) {
        opnd rets, args;
        memset(&rets, 0, sizeof rets);
        memset(&args, 0, sizeof args);
        if (is_p(cur(ps), '(')) {
            if (parse_operand(ps, &rets))
                return -1;
            if (expect(ps, ','))
                return -1;
        }
        if (cur(ps)->kind != TK_ID)
            return fail(ps, line, PTX_ERR_INVALID, "call: expected a function name");
        char fname[128];
        tokstr(cur(ps), fname, sizeof fname);
        ps->i++;
        if (is_p(cur(ps), ',')) {
            ps->i++;
            if (!is_p(cur(ps), '('))
                return fail(ps, line, PTX_ERR_INVALID, "call: indirect calls are not supported");
            if (parse_operand(ps, &args))
                return -1;
        }
        if (is_p(cur(ps), ','))
            return fail(ps, line, PTX_ERR_INVALID, "call: indirect calls (prototype list) are not supported");
        if (expect(ps, ';'))
            return -1;
        for (int i = 0; i < md.n; i++)
            if (strcmp(md.m[i], "uni") != 0)
                return fail(ps, line, PTX_ERR_INVALID, "unsupported instruction '%s'", opname);
        pfunc *f = ps->f;
        if (!GROW(f->calls, f->ncalls, f->cap_calls))
            return nomem(ps);
        pcall *c = &f->calls[f->ncalls];
        memset(c, 0, sizeof *c);
        c->nargs = args.nv;
        c->nrets = rets.nv;
        for (int k = 0; k < args.nv + rets.nv; k++) {
            const char *nm = k < args.nv ? args.vnames[k] : rets.vnames[k - args.nv];
            sym *s = find_sym(ps->fsyms, ps->nfsyms, nm);
            if (!s || s->kind != SYM_FPARAM)
                return fail(ps, line, PTX_ERR_INVALID, "call: '%s' is not a .param variable of the caller", nm);
            if (k < args.nv)
                c->arg_off[k] = (uint32_t)s->value;
            else
                c->ret_off[k - args.nv] = (uint32_t)s->value;
        }
        in.op = OP_CALL;
        in.aux = (int32_t)f->ncalls++;
        if (!GROW(ps->callfix, ps->ncallfix, ps->cap_callfix))
            return nomem(ps);
        ps->callfix[ps->ncallfix].func = ps->fidx;
        ps->callfix[ps->ncallfix].pc = f->ncode;
        ps->callfix[ps->ncallfix].line = line;
        snprintf(ps->callfix[ps->ncallfix].name, sizeof ps->callfix[0].name, "%s", fname);
        ps->ncallfix++;
        return emit(ps, &in);
    }

    while (!is_p(cur(ps), ';')) {
        if (cur(ps)->kind == TK_EOF)
            return fail(ps, line, PTX_ERR_INVALID, "missing ';'");
        if (n >= 8)
            return fail(ps, line, PTX_ERR_INVALID, "too many operands");
        if (parse_operand(ps, &ops[n++]))
            return -1;
        if (is_p(cur(ps), ','))
            ps->i++;
        else if (!is_p(cur(ps), ';'))
            return fail(ps, line, PTX_ERR_INVALID, "expected ',' or ';' after an operand");
    }
    ps->i++;

    int types[3] = {0};
    int nt = types_of(&md, types, 3);
    int ty = nt ? types[nt - 1] : 0;
    in.type = (uint8_t)ty;
    int rc = 0;
#define OP(name) (strcmp(b, name) == 0)
#define SRC(k, field, type) (rc = rc ? rc : src_slot(ps, &ops[k], (type), line, &in.field))
#define DST(k, field) (rc = rc ? rc : dst_slot(ps, &ops[k], line, &in.field))
#define NEEDS(lo, hi) do { if (nops_check(ps, line, opname, n, (lo), (hi))) return -1; } while (0)

    if (OP("mov")) {
        NEEDS(2, 2);
        if (ops[1].kind == O_NAME && (!strcmp(ops[1].name, "%clock") || !strcmp(ops[1].name, "%clock64") ||
                                      !strcmp(ops[1].name, "%globaltimer") ||
                                      !strcmp(ops[1].name, "%clock_hi"))) {
            in.op = OP_CLOCK;
            in.mode = !strcmp(ops[1].name, "%globaltimer") ? 1 : 0;
            DST(0, d);
        } else if (ops[0].kind == O_VEC) {
            in.op = OP_UNPACK;
            in.vec = (uint8_t)ops[0].nv;
            rc = vec_slots(ps, &ops[0], ty, line, 1, in.v);
            SRC(1, a, ty);
        } else if (ops[1].kind == O_VEC) {
            in.op = OP_PACK;
            in.vec = (uint8_t)ops[1].nv;
            DST(0, d);
            rc = rc ? rc : vec_slots(ps, &ops[1], ty, line, 0, in.v);
        } else {
            in.op = OP_MOV;
            DST(0, d);
            SRC(1, a, ty);
        }
    } else if (OP("ld") || OP("ldu") || OP("st")) {
        int st = OP("st");
        NEEDS(2, 2);
        in.op = st ? OP_ST : OP_LD;
        in.space = (uint8_t)space_of(&md);
        if (has(&md, "v2"))
            in.vec = 2;
        else if (has(&md, "v4"))
            in.vec = 4;
        else if (has(&md, "v8"))
            return fail(ps, line, PTX_ERR_INVALID, "unsupported instruction '%s' (.v8)", opname);
        if (!ty || ty == T_PRED)
            return fail(ps, line, PTX_ERR_INVALID, "'%s' needs a type", opname);
        opnd *addr = &ops[st ? 0 : 1], *val = &ops[st ? 1 : 0];
        rc = addr_operand(ps, addr, line, &in);
        if (in.space == S_PARAM) {
            /* A kernel's own parameters live in the launch's buffer; a
             * .func's parameters and call-site .param variables in the
             * per-lane frame. */
            sym *s = addr->name[0] ? lookup(ps, addr->name) : NULL;
            if (!ps->f->is_entry || (s && s->kind == SYM_FPARAM))
                in.space = S_FRAME;
        }
        if (in.vec > 1) {
            if (val->kind != O_VEC || val->nv != in.vec)
                return fail(ps, line, PTX_ERR_INVALID, "'%s' needs a vector of %d", opname, in.vec);
            rc = rc ? rc : vec_slots(ps, val, ty, line, !st, in.v);
        } else if (st) {
            SRC(1, b, ty);
        } else {
            DST(0, d);
        }
    } else if (OP("cvta")) {
        NEEDS(2, 2);
        in.op = has(&md, "to") ? OP_CVTA_TO : OP_CVTA_FROM;
        in.space = (uint8_t)space_of(&md);
        if (in.space == S_GENERIC)
            return fail(ps, line, PTX_ERR_INVALID, "'%s' needs a state space", opname);
        DST(0, d);
        SRC(1, a, ty);
    } else if (OP("cvt")) {
        in.op = OP_CVT;
        in.mode = (uint8_t)rounding_of(&md);
        if (has(&md, "ftz"))
            in.flags |= FL_FTZ;
        if (has(&md, "sat"))
            in.flags |= FL_SAT;
        if (nt != 2)
            return fail(ps, line, PTX_ERR_INVALID, "'%s' needs two types", opname);
        in.type = (uint8_t)types[0];
        in.type2 = (uint8_t)types[1];
        if (in.type == T_F16X2 || in.type == T_BF16X2) {
            NEEDS(3, 3);
            DST(0, d);
            SRC(1, a, types[1]);
            SRC(2, b, types[1]);
        } else {
            NEEDS(2, 2);
            DST(0, d);
            SRC(1, a, types[1]);
        }
    } else if (OP("add") || OP("sub") || OP("mul") || OP("div") || OP("rem") || OP("min") ||
               OP("max") || OP("and") || OP("or") || OP("xor") || OP("shl") || OP("shr") ||
               OP("copysign") || OP("addc") || OP("subc") || OP("mul24")) {
        NEEDS(3, 3);
        in.op = OP("add") ? OP_ADD : OP("sub") ? OP_SUB : OP("mul") ? OP_MUL : OP("div") ? OP_DIV
              : OP("rem") ? OP_REM : OP("min") ? OP_MIN : OP("max") ? OP_MAX : OP("and") ? OP_AND
              : OP("or") ? OP_OR : OP("xor") ? OP_XOR : OP("shl") ? OP_SHL : OP("shr") ? OP_SHR
              : OP("addc") ? OP_ADDC : OP("subc") ? OP_SUBC : OP("mul24") ? OP_MUL24 : OP_COPYSIGN;
        in.mode = (uint8_t)rounding_of(&md);
        if (has(&md, "ftz"))
            in.flags |= FL_FTZ;
        if (has(&md, "sat"))
            in.flags |= FL_SAT;
        if (has(&md, "approx") || has(&md, "full"))
            in.flags |= FL_APPROX;
        if (has(&md, "cc"))
            in.flags |= FL_CC;
        if (has(&md, "NaN"))
            in.flags |= FL_NAN;
        if (has(&md, "hi"))
            in.type2 = MULW_HI;
        else if (has(&md, "wide"))
            in.type2 = MULW_WIDE;
        else
            (void)has(&md, "lo");
        int st = (in.op == OP_SHL || in.op == OP_SHR) ? T_U32 : ty;
        DST(0, d);
        SRC(1, a, ty);
        SRC(2, b, st);
        if (in.type2 == MULW_WIDE && ty != T_U16 && ty != T_S16 && ty != T_U32 && ty != T_S32)
            return fail(ps, line, PTX_ERR_INVALID, "'%s': .wide needs a 16- or 32-bit type", opname);
    } else if (OP("fns")) {
        NEEDS(4, 4);
        in.op = OP_FNS;
        DST(0, d); SRC(1, a, T_B32); SRC(2, b, T_U32); SRC(3, c, T_S32);
    } else if (OP("mad") || OP("fma") || OP("mad24") || OP("sad") || OP("madc")) {
        NEEDS(4, 4);
        in.mode = (uint8_t)rounding_of(&md);
        if (has(&md, "ftz"))
            in.flags |= FL_FTZ;
        if (has(&md, "sat"))
            in.flags |= FL_SAT;
        if (has(&md, "cc"))
            in.flags |= FL_CC;
        if (has(&md, "hi"))
            in.type2 = MULW_HI;
        else if (has(&md, "wide"))
            in.type2 = MULW_WIDE;
        else
            (void)has(&md, "lo");
        in.op = OP("madc") ? OP_MADC : OP("sad") ? OP_SAD : OP("mad24") ? OP_MAD24 : is_float_type(ty) || ty == T_F16X2 || ty == T_BF16X2 ? OP_FMA : OP_MAD;
        if (OP("mad") && in.op == OP_FMA && in.mode == RND_NONE && ty != T_F32)
            return fail(ps, line, PTX_ERR_INVALID, "'%s' without a rounding mode", opname);
        int ct = in.type2 == MULW_WIDE ? (ty == T_U32 ? T_U64 : ty == T_S32 ? T_S64 : ty == T_U16 ? T_U32 : T_S32) : ty;
        DST(0, d);
        SRC(1, a, ty);
        SRC(2, b, ty);
        SRC(3, c, ct);
    } else if (OP("abs") || OP("neg") || OP("not") || OP("cnot") || OP("popc") || OP("clz") ||
               OP("brev") || OP("rcp") || OP("sqrt") || OP("rsqrt") || OP("sin") || OP("cos") ||
               OP("lg2") || OP("ex2") || OP("tanh") || OP("bfind")) {
        NEEDS(2, 2);
        in.op = OP("abs") ? OP_ABS : OP("neg") ? OP_NEG : OP("not") ? OP_NOT : OP("cnot") ? OP_CNOT
              : OP("popc") ? OP_POPC : OP("clz") ? OP_CLZ : OP("brev") ? OP_BREV : OP("rcp") ? OP_RCP
              : OP("sqrt") ? OP_SQRT : OP("rsqrt") ? OP_RSQRT : OP("sin") ? OP_SIN : OP("cos") ? OP_COS
              : OP("lg2") ? OP_LG2 : OP("ex2") ? OP_EX2 : OP("tanh") ? OP_TANH : OP_BFIND;
        in.mode = (uint8_t)rounding_of(&md);
        if (has(&md, "ftz"))
            in.flags |= FL_FTZ;
        if (has(&md, "approx"))
            in.flags |= FL_APPROX;
        if (has(&md, "shiftamt"))
            in.flags |= FL_SHIFTAMT;
        DST(0, d);
        SRC(1, a, ty);
    } else if (OP("bfe") || OP("bfi") || OP("prmt") || OP("shf") || OP("lop3")) {
        if (OP("bfe")) {
            NEEDS(4, 4);
            in.op = OP_BFE;
            DST(0, d); SRC(1, a, ty); SRC(2, b, T_U32); SRC(3, c, T_U32);
        } else if (OP("bfi")) {
            NEEDS(5, 5);
            in.op = OP_BFI;
            DST(0, d); SRC(1, a, ty); SRC(2, b, ty); SRC(3, c, T_U32); SRC(4, e, T_U32);
        } else if (OP("prmt")) {
            NEEDS(4, 4);
            in.op = OP_PRMT;
            static const char *const pm[] = {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"};
            in.mode = 0;
            for (int k = 0; k < 6; k++)
                if (has(&md, pm[k]))
                    in.mode = (uint8_t)(k + 1);
            DST(0, d); SRC(1, a, T_B32); SRC(2, b, T_B32); SRC(3, c, T_B32);
        } else if (OP("shf")) {
            NEEDS(4, 4);
            in.op = OP_SHF;
            if (has(&md, "r"))
                in.flags |= FL_RIGHT;
            else if (!has(&md, "l"))
                return fail(ps, line, PTX_ERR_INVALID, "'%s' needs .l or .r", opname);
            if (has(&md, "wrap"))
                in.flags |= FL_WRAP;
            else if (!has(&md, "clamp"))
                return fail(ps, line, PTX_ERR_INVALID, "'%s' needs .wrap or .clamp", opname);
            DST(0, d); SRC(1, a, T_B32); SRC(2, b, T_B32); SRC(3, c, T_U32);
        } else {
            NEEDS(5, 5);
            in.op = OP_LOP3;
            if (ops[4].kind != O_INT)
                return fail(ps, line, PTX_ERR_INVALID, "lop3: the table must be an immediate");
            in.imm = (int64_t)(ops[4].bits & 0xff);
            DST(0, d); SRC(1, a, T_B32); SRC(2, b, T_B32); SRC(3, c, T_B32);
        }
    } else if (OP("setp")) {
        NEEDS(3, 4);
        in.op = OP_SETP;
        in.mode = (uint8_t)cmp_of(&md);
        if (!in.mode)
            return fail(ps, line, PTX_ERR_INVALID, "'%s' needs a comparison", opname);
        in.type2 = has(&md, "and") ? BOOL_AND : has(&md, "or") ? BOOL_OR : has(&md, "xor") ? BOOL_XOR : BOOL_NONE;
        if (has(&md, "ftz"))
            in.flags |= FL_FTZ;
        if ((in.type2 != BOOL_NONE) != (n == 4))
            return fail(ps, line, PTX_ERR_INVALID, "'%s': a boolean operation needs a predicate operand", opname);
        DST(0, d);
        if (!rc && ops[0].pair[0]) {
            opnd q;
            memset(&q, 0, sizeof q);
            q.kind = O_NAME;
            snprintf(q.name, sizeof q.name, "%s", ops[0].pair);
            rc = dst_slot(ps, &q, line, &in.d2);
        }
        SRC(1, a, ty);
        SRC(2, b, ty);
        if (n == 4) {
            SRC(3, c, T_PRED);
            if (ops[3].neg)
                in.neg |= 4;
        }
    } else if (OP("selp")) {
        NEEDS(4, 4);
        in.op = OP_SELP;
        DST(0, d); SRC(1, a, ty); SRC(2, b, ty); SRC(3, c, T_PRED);
        if (ops[3].neg)
            in.neg |= 4;
    } else if (OP("testp")) {
        NEEDS(2, 2);
        in.op = OP_TESTP;
        static const char *const tn[] = {NULL, "finite", "infinite", "number", "notanumber", "normal", "subnormal"};
        for (int k = 1; k <= 6; k++)
            if (has(&md, tn[k]))
                in.mode = (uint8_t)k;
        if (!in.mode)
            return fail(ps, line, PTX_ERR_INVALID, "'%s' needs a test", opname);
        DST(0, d); SRC(1, a, ty);
    } else if (OP("bra")) {
        NEEDS(1, 1);
        if (ops[0].kind != O_NAME)
            return fail(ps, line, PTX_ERR_INVALID, "bra: expected a label (indirect branches are not supported)");
        in.op = OP_BRA;
        if (!GROW(ps->fix, ps->nfix, ps->cap_fix))
            return nomem(ps);
        ps->fix[ps->nfix].pc = ps->f->ncode;
        ps->fix[ps->nfix].line = line;
        snprintf(ps->fix[ps->nfix].label, sizeof ps->fix[0].label, "%s", ops[0].name);
        ps->nfix++;
    } else if (OP("ret") || OP("exit") || OP("trap") || OP("brkpt")) {
        NEEDS(0, 0);
        in.op = OP("ret") ? OP_RET : OP("exit") ? OP_EXIT : OP_TRAP;
    } else if (OP("bar") || OP("barrier")) {
        if (has(&md, "warp")) {
            NEEDS(1, 1);
            (void)has(&md, "sync");
            in.op = OP_BARWARP;
            SRC(0, a, T_B32);
        } else {
            if (!has(&md, "sync") && !(OP("barrier") && md.n == 0) && !has(&md, "cta"))
                return fail(ps, line, PTX_ERR_INVALID, "unsupported instruction '%s' (only bar.sync)", opname);
            (void)has(&md, "cta");
            (void)has(&md, "sync");
            NEEDS(1, 2);
            if (n == 2)
                return fail(ps, line, PTX_ERR_INVALID, "'%s' with a thread count is not supported", opname);
            in.op = OP_BAR;
            ps->f->uses_barrier = 1;
        }
    } else if (OP("membar") || OP("fence") || OP("prefetch") || OP("prefetchu") || OP("nanosleep") ||
               OP("pmevent")) {
        for (int i = 0; i < md.n; i++)
            md.used[i] = 1;
        if (OP("fence") && (has(&md, "proxy") || has(&md, "mbarrier_init")))
            return fail(ps, line, PTX_ERR_INVALID, "unsupported instruction '%s'", opname);
        in.op = OP_NOPMEM;
    } else if (OP("atom") || OP("red")) {
        in.op = OP("atom") ? OP_ATOM : OP_RED;
        in.space = (uint8_t)space_of(&md);
        static const char *const an[] = {NULL, "add", "min", "max", "exch", "cas", "and", "or", "xor", "inc", "dec"};
        for (int k = 1; k <= ATOM_DEC; k++)
            if (has(&md, an[k]))
                in.mode = (uint8_t)k;
        if (!in.mode)
            return fail(ps, line, PTX_ERR_INVALID, "'%s' needs an operation", opname);
        if (has(&md, "v2") || has(&md, "v4") || has(&md, "noftz"))
            return fail(ps, line, PTX_ERR_INVALID, "unsupported instruction '%s'", opname);
        if (ty == T_F16 || ty == T_BF16 || ty == T_F16X2 || ty == T_BF16X2 || ty == T_B128)
            return fail(ps, line, PTX_ERR_INVALID, "unsupported instruction '%s' (type)", opname);
        int k = 0;
        if (in.op == OP_ATOM) {
            NEEDS(in.mode == ATOM_CAS ? 4 : 3, in.mode == ATOM_CAS ? 4 : 3);
            DST(0, d);
            k = 1;
        } else {
            NEEDS(2, 2);
        }
        rc = rc ? rc : addr_operand(ps, &ops[k], line, &in);
        SRC(k + 1, b, ty);
        if (in.mode == ATOM_CAS)
            SRC(k + 2, c, ty);
    } else if (OP("shfl")) {
        if (!has(&md, "sync"))
            return fail(ps, line, PTX_ERR_INVALID, "'%s': shfl without .sync is not supported (sm_70+)", opname);
        NEEDS(5, 5);
        in.op = OP_SHFL;
        in.mode = has(&md, "up") ? SHFL_UP : has(&md, "down") ? SHFL_DOWN : has(&md, "bfly") ? SHFL_BFLY : has(&md, "idx") ? SHFL_IDX : 0;
        if (!in.mode)
            return fail(ps, line, PTX_ERR_INVALID, "'%s' needs a mode", opname);
        DST(0, d);
        if (!rc && ops[0].pair[0]) {
            opnd q;
            memset(&q, 0, sizeof q);
            q.kind = O_NAME;
            snprintf(q.name, sizeof q.name, "%s", ops[0].pair);
            rc = dst_slot(ps, &q, line, &in.d2);
        }
        SRC(1, a, T_B32); SRC(2, b, T_U32); SRC(3, c, T_U32); SRC(4, e, T_U32);
    } else if (OP("vote")) {
        NEEDS(3, 3);
        if (!has(&md, "sync"))
            return fail(ps, line, PTX_ERR_INVALID, "'%s': vote without .sync is not supported (sm_70+)", opname);
        in.op = OP_VOTE;
        in.mode = has(&md, "all") ? VOTE_ALL : has(&md, "any") ? VOTE_ANY : has(&md, "uni") ? VOTE_UNI : has(&md, "ballot") ? VOTE_BALLOT : 0;
        if (!in.mode)
            return fail(ps, line, PTX_ERR_INVALID, "'%s' needs a mode", opname);
        DST(0, d); SRC(1, a, T_PRED); SRC(2, e, T_U32);
        if (ops[1].neg)
            in.neg |= 1;
    } else if (OP("activemask")) {
        NEEDS(1, 1);
        in.op = OP_ACTIVEMASK;
        DST(0, d);
    } else if (OP("redux")) {
        NEEDS(3, 3);
        (void)has(&md, "sync");
        in.op = OP_REDUX;
        static const char *const rn[] = {NULL, "add", "min", "max", NULL, NULL, "and", "or", "xor"};
        for (int k = 1; k <= ATOM_XOR; k++)
            if (rn[k] && has(&md, rn[k]))
                in.mode = (uint8_t)k;
        if (!in.mode || ty == T_F32)
            return fail(ps, line, PTX_ERR_INVALID, "unsupported instruction '%s'", opname);
        DST(0, d); SRC(1, a, ty); SRC(2, e, T_U32);
    } else if (OP("match")) {
        NEEDS(3, 3);
        (void)has(&md, "sync");
        in.op = OP_MATCH;
        in.mode = has(&md, "any") ? 1 : has(&md, "all") ? 2 : 0;
        if (!in.mode)
            return fail(ps, line, PTX_ERR_INVALID, "'%s' needs .any or .all", opname);
        DST(0, d);
        if (!rc && ops[0].pair[0]) {
            opnd q;
            memset(&q, 0, sizeof q);
            q.kind = O_NAME;
            snprintf(q.name, sizeof q.name, "%s", ops[0].pair);
            rc = dst_slot(ps, &q, line, &in.d2);
        }
        SRC(1, a, ty); SRC(2, e, T_U32);
    } else {
        return fail(ps, line, PTX_ERR_INVALID, "unsupported instruction '%s'", opname);
    }
    if (rc)
        return -1;
    for (int i = 0; i < md.n; i++)
        if (!md.used[i] && !harmless(md.m[i]))
            return fail(ps, line, PTX_ERR_INVALID, "unsupported instruction '%s' (modifier .%s)", opname, md.m[i]);
    if (in.op == OP_SETP || in.op == OP_SELP || in.op == OP_MOV || in.op == OP_LD || in.op == OP_ST) {
        if (!in.type)
            return fail(ps, line, PTX_ERR_INVALID, "'%s' needs a type", opname);
    }
    if ((in.op == OP_RCP || in.op == OP_SQRT || in.op == OP_DIV) && (ty == T_F32 || ty == T_F64) &&
        !in.mode && !(in.flags & FL_APPROX))
        return fail(ps, line, PTX_ERR_INVALID, "'%s' needs a rounding mode or .approx", opname);
    return emit(ps, &in);
#undef OP
#undef SRC
#undef DST
#undef NEEDS
}

/* ------------------------------------------------------------- declarations */

typedef struct decl {
    uint32_t align;
    int type;
    int vecn;
} decl;

/* [.align N] [.v2|.v4] .type, after the state space. */
static int parse_decl_head(parser *ps, decl *d)
{
    memset(d, 0, sizeof *d);
    d->vecn = 1;
    for (;;) {
        tok *t = cur(ps);
        if (is_id(t, ".align")) {
            ps->i++;
            uint64_t a;
            if (parse_uint(cur(ps), &a) || a == 0 || (a & (a - 1)))
                return fail(ps, t->line, PTX_ERR_INVALID, "bad .align");
            d->align = (uint32_t)a;
            ps->i++;
        } else if (is_id(t, ".v2") || is_id(t, ".v4")) {
            d->vecn = t->s[2] - '0';
            ps->i++;
        } else if (is_id(t, ".ptr") || is_id(t, ".global") || is_id(t, ".shared") ||
                   is_id(t, ".const") || is_id(t, ".local")) {
            ps->i++; /* kernel parameter attributes (.ptr .global .align N) */
        } else if (t->kind == TK_ID && t->s[0] == '.' && t->len > 1) {
            char nm[32];
            tokstr(t, nm, sizeof nm);
            int ty = type_named(nm + 1);
            if (!ty)
                return fail(ps, t->line, PTX_ERR_INVALID, "unsupported declaration qualifier '%s'", nm);
            d->type = ty;
            ps->i++;
            return 0;
        } else {
            return fail(ps, t->line, PTX_ERR_INVALID, "expected a type in a declaration");
        }
    }
}

/* name, name<N> or name[N] / name[]; returns the element count (-1 for []). */
static int parse_decl_name(parser *ps, char *name, size_t n, long *count, int *angle)
{
    tok *t = cur(ps);
    if (t->kind != TK_ID)
        return fail(ps, t->line, PTX_ERR_INVALID, "expected a name in a declaration");
    tokstr(t, name, n);
    ps->i++;
    *count = 1;
    *angle = 0;
    if (is_p(cur(ps), '<')) {
        ps->i++;
        uint64_t v;
        if (parse_uint(cur(ps), &v))
            return fail(ps, t->line, PTX_ERR_INVALID, "bad register count");
        ps->i++;
        if (expect(ps, '>'))
            return -1;
        *count = (long)v;
        *angle = 1;
    } else {
        long total = 1;
        while (is_p(cur(ps), '[')) {
            ps->i++;
            if (is_p(cur(ps), ']')) {
                total = -1;
            } else {
                uint64_t v;
                if (parse_uint(cur(ps), &v))
                    return fail(ps, t->line, PTX_ERR_INVALID, "bad array size");
                ps->i++;
                total = total < 0 ? -1 : total * (long)v;
            }
            if (expect(ps, ']'))
                return -1;
        }
        *count = total;
    }
    return 0;
}

static uint32_t align_up(uint32_t v, uint32_t a) { return a ? (v + a - 1) & ~(a - 1) : v; }

/* An initializer of a module variable: a scalar or { list }. */
static int parse_init(parser *ps, int type, unsigned char *data, size_t size, long *nelem)
{
    int esize = ptx_type_size(type);
    long k = 0;
    int braces = is_p(cur(ps), '{');
    if (braces)
        ps->i++;
    for (;;) {
        tok *t = cur(ps);
        if (braces && is_p(t, '}')) {
            ps->i++;
            break;
        }
        opnd o;
        memset(&o, 0, sizeof o);
        if (is_p(t, '-') && peekn(ps, 1)->kind == TK_NUM) {
            ps->i++;
            parse_number(ps, 1, &o);
        } else if (t->kind == TK_NUM) {
            parse_number(ps, 0, &o);
        } else {
            return fail(ps, t->line, PTX_ERR_INVALID, "unsupported initializer (only numbers)");
        }
        uint64_t v = imm_value(&o, type);
        if (data && (size_t)(k + 1) * (size_t)esize <= size)
            memcpy(data + (size_t)k * (size_t)esize, &v, (size_t)esize);
        k++;
        if (!braces)
            break;
        if (is_p(cur(ps), ','))
            ps->i++;
    }
    *nelem = k;
    return 0;
}

/* .global / .const / .shared at module scope or in a body; .local in a body. */
static int parse_var(parser *ps, int space, int module_scope, int is_extern)
{
    int line = cur(ps)->line;
    decl d;
    if (parse_decl_head(ps, &d))
        return -1;
    for (;;) {
        char name[128];
        long count;
        int angle;
        if (parse_decl_name(ps, name, sizeof name, &count, &angle))
            return -1;
        uint32_t esize = (uint32_t)ptx_type_size(d.type) * (uint32_t)d.vecn;
        uint32_t align = d.align ? d.align : esize;
        if (space == S_SHARED) {
            if (count < 0 || is_extern) {
                if (add_sym(ps, module_scope, name, SYM_DYNSHARED, 0, 0))
                    return -1;
                ps->m->has_dynamic_shared = 1;
            } else {
                ps->shared_pool = align_up(ps->shared_pool, align);
                if (add_sym(ps, module_scope, name, SYM_SHARED, ps->shared_pool, (uint32_t)count * esize))
                    return -1;
                ps->shared_pool += (uint32_t)count * esize;
            }
        } else if (space == S_LOCAL) {
            if (module_scope || count < 0)
                return fail(ps, line, PTX_ERR_INVALID, "unsupported .local declaration of '%s'", name);
            uint32_t off = align_up(ps->f->local_bytes, align < 16 ? 16 : align);
            if (add_sym(ps, 0, name, SYM_LOCAL, off, (uint32_t)count * esize))
                return -1;
            ps->f->local_bytes = off + (uint32_t)count * esize;
        } else { /* .global, .const: module memory */
            if (is_extern)
                return fail(ps, line, PTX_ERR_INVALID, "external variable '%s' is not supported", name);
            pmodule *m = ps->m;
            if (!GROW(m->vars, m->nvars, m->cap_vars))
                return nomem(ps);
            long nelem = count;
            size_t save = ps->i;
            if (is_p(cur(ps), '=')) {
                ps->i++;
                save = ps->i;
                if (parse_init(ps, d.type, NULL, 0, &nelem))
                    return -1;
                if (count >= 0 && nelem > count * d.vecn)
                    return fail(ps, line, PTX_ERR_INVALID, "too many initializers for '%s'", name);
                if (count >= 0)
                    nelem = count;
            }
            if (nelem <= 0)
                return fail(ps, line, PTX_ERR_INVALID, "variable '%s' has no size", name);
            size_t size = (size_t)nelem * esize;
            void *data = NULL;
            if (posix_memalign(&data, 64, size ? size : 1))
                return nomem(ps);
            memset(data, 0, size);
            if (save != ps->i) {
                size_t end = ps->i;
                ps->i = save;
                long dummy;
                parse_init(ps, d.type, data, size, &dummy);
                ps->i = end;
            }
            pvar *v = &m->vars[m->nvars++];
            v->name = strdup(name);
            v->data = data;
            v->size = size;
            if (!v->name || add_sym(ps, 1, name, SYM_VAR, (uint64_t)(uintptr_t)data, (uint32_t)size))
                return nomem(ps);
        }
        if (is_p(cur(ps), ',')) {
            ps->i++;
            continue;
        }
        break;
    }
    return expect(ps, ';');
}

static int parse_reg_decl(parser *ps)
{
    int line = cur(ps)->line;
    decl d;
    if (parse_decl_head(ps, &d))
        return -1;
    if (d.vecn != 1)
        return fail(ps, line, PTX_ERR_INVALID, "vector registers are not supported");
    for (;;) {
        char name[128];
        long count;
        int angle;
        if (parse_decl_name(ps, name, sizeof name, &count, &angle))
            return -1;
        if (!angle && count != 1)
            return fail(ps, line, PTX_ERR_INVALID, "register arrays are not supported");
        if (!GROW(ps->regs, ps->nregs, ps->cap_regs))
            return nomem(ps);
        regdecl *r = &ps->regs[ps->nregs++];
        snprintf(r->name, sizeof r->name, "%s", name);
        r->count = angle ? (int)count : 0;
        r->type = d.type;
        r->base = new_slots(ps, angle ? (uint32_t)count : 1);
        if (is_p(cur(ps), ',')) {
            ps->i++;
            continue;
        }
        break;
    }
    return expect(ps, ';');
}

/* A .param in a body: a call argument or return slot in the per-lane frame. */
static int parse_frame_param(parser *ps)
{
    decl d;
    if (parse_decl_head(ps, &d))
        return -1;
    char name[128];
    long count;
    int angle;
    if (parse_decl_name(ps, name, sizeof name, &count, &angle))
        return -1;
    if (count < 0)
        return fail(ps, cur(ps)->line, PTX_ERR_INVALID, "unsized .param '%s'", name);
    uint32_t esize = (uint32_t)ptx_type_size(d.type) * (uint32_t)d.vecn;
    uint32_t align = d.align ? d.align : esize;
    uint32_t off = align_up(ps->f->frame_bytes, align);
    ps->f->frame_bytes = off + (uint32_t)count * esize;
    if (add_sym(ps, 0, name, SYM_FPARAM, off, (uint32_t)count * esize))
        return -1;
    return expect(ps, ';');
}

/* ( .param .type name, ... ) of an .entry or .func. */
static int parse_param_list(parser *ps, int entry, pparam *out, uint32_t *nout, uint32_t max)
{
    if (expect(ps, '('))
        return -1;
    while (!is_p(cur(ps), ')')) {
        int line = cur(ps)->line;
        if (!is_id(cur(ps), ".param"))
            return fail(ps, line, PTX_ERR_INVALID, "expected .param (register parameters are not supported)");
        ps->i++;
        decl d;
        if (parse_decl_head(ps, &d))
            return -1;
        char name[128];
        long count;
        int angle;
        if (parse_decl_name(ps, name, sizeof name, &count, &angle))
            return -1;
        if (count < 0)
            return fail(ps, line, PTX_ERR_INVALID, "unsized parameter '%s'", name);
        if (*nout >= max)
            return fail(ps, line, PTX_ERR_INVALID, "more than %u parameters", max);
        uint32_t esize = (uint32_t)ptx_type_size(d.type) * (uint32_t)d.vecn;
        uint32_t align = d.align ? d.align : esize;
        uint32_t size = (uint32_t)count * esize;
        uint32_t *bytes = entry ? &ps->f->param_bytes : &ps->f->frame_bytes;
        uint32_t off = align_up(*bytes, align);
        *bytes = off + size;
        out[*nout].offset = off;
        out[*nout].size = size;
        (*nout)++;
        if (add_sym(ps, 0, name, entry ? SYM_KPARAM : SYM_FPARAM, off, size))
            return -1;
        if (is_p(cur(ps), ','))
            ps->i++;
        else if (!is_p(cur(ps), ')'))
            return fail(ps, line, PTX_ERR_INVALID, "expected ',' or ')' in a parameter list");
    }
    ps->i++;
    return 0;
}

static int parse_body(parser *ps)
{
    int depth = 1;
    while (depth > 0) {
        tok *t = cur(ps);
        if (t->kind == TK_EOF)
            return fail(ps, t->line, PTX_ERR_INVALID, "unterminated function body");
        if (is_p(t, '{')) {
            depth++;
            ps->i++;
        } else if (is_p(t, '}')) {
            depth--;
            ps->i++;
        } else if (is_p(t, ';')) {
            ps->i++;
        } else if (is_id(t, ".reg")) {
            ps->i++;
            if (parse_reg_decl(ps))
                return -1;
        } else if (is_id(t, ".local") || is_id(t, ".shared")) {
            int sp = is_id(t, ".local") ? S_LOCAL : S_SHARED;
            ps->i++;
            if (parse_var(ps, sp, 0, 0))
                return -1;
        } else if (is_id(t, ".param")) {
            ps->i++;
            if (parse_frame_param(ps))
                return -1;
        } else if (is_id(t, ".pragma") || is_id(t, ".loc") || is_id(t, ".file")) {
            skip_statement(ps);
        } else if (t->kind == TK_ID && t->s[0] == '.') {
            char nm[64];
            tokstr(t, nm, sizeof nm);
            return fail(ps, t->line, PTX_ERR_INVALID, "unsupported directive '%s' in a function body", nm);
        } else if (t->kind == TK_ID && is_p(peekn(ps, 1), ':')) {
            char nm[128];
            tokstr(t, nm, sizeof nm);
            if (!GROW(ps->labels, ps->nlabels, ps->cap_labels))
                return nomem(ps);
            snprintf(ps->labels[ps->nlabels].name, sizeof ps->labels[0].name, "%s", nm);
            ps->labels[ps->nlabels].value = (uint64_t)ps->f->ncode;
            ps->nlabels++;
            ps->i += 2;
        } else if (is_p(t, '@')) {
            ps->i++;
            int neg = 0;
            if (is_p(cur(ps), '!')) {
                neg = 1;
                ps->i++;
            }
            char nm[128];
            tokstr(cur(ps), nm, sizeof nm);
            uint32_t g;
            if (cur(ps)->kind != TK_ID || !reg_lookup(ps, nm, &g))
                return fail(ps, t->line, PTX_ERR_INVALID, "bad guard predicate '%s'", nm);
            ps->i++;
            if (cur(ps)->kind != TK_ID)
                return fail(ps, t->line, PTX_ERR_INVALID, "expected an instruction after a guard");
            if (parse_instruction(ps, g, neg))
                return -1;
        } else if (t->kind == TK_ID) {
            if (parse_instruction(ps, PTX_NONE, 0))
                return -1;
        } else {
            char nm[32];
            tokstr(t, nm, sizeof nm);
            return fail(ps, t->line, PTX_ERR_INVALID, "unexpected '%s'", nm);
        }
        if (ps->err)
            return -1;
    }
    return 0;
}

static int find_func(pmodule *m, const char *name)
{
    for (uint32_t i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int parse_function(parser *ps, int entry, int is_extern)
{
    int line = cur(ps)->line;
    pmodule *m = ps->m;
    /* Parameters are parsed into a scratch function first: a prototype may
     * precede the definition. */
    pfunc tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.is_entry = entry;
    ps->f = &tmp;
    ps->nfsyms = ps->nregs = ps->nlabels = ps->nfix = 0;
    if (!entry && is_p(cur(ps), '(')) {
        if (parse_param_list(ps, 0, tmp.rets, &tmp.nrets, PTX_MAX_CALL_ARGS))
            goto fail;
    }
    if (cur(ps)->kind != TK_ID) {
        fail(ps, line, PTX_ERR_INVALID, "expected a function name");
        goto fail;
    }
    char name[128];
    tokstr(cur(ps), name, sizeof name);
    ps->i++;
    /* Returns come after the formals in the frame. */
    if (!entry && tmp.nrets) {
        /* re-layout: formals first is not required; keep returns where they are */
    }
    if (is_p(cur(ps), '(')) {
        if (parse_param_list(ps, entry, tmp.params, &tmp.nparams, entry ? AR_KERNEL_MAX_PARAMS : PTX_MAX_CALL_ARGS))
            goto fail;
    }
    while (cur(ps)->kind == TK_ID && cur(ps)->s[0] == '.') {
        /* performance directives: .maxntid 256, 1, 1 .reqntid .minnctapersm .maxnreg .noreturn */
        if (!(is_id(cur(ps), ".maxntid") || is_id(cur(ps), ".reqntid") || is_id(cur(ps), ".minnctapersm") ||
              is_id(cur(ps), ".maxnreg") || is_id(cur(ps), ".noreturn") || is_id(cur(ps), ".maxclusterrank") ||
              is_id(cur(ps), ".pragma"))) {
            char nm[64];
            tokstr(cur(ps), nm, sizeof nm);
            fail(ps, cur(ps)->line, PTX_ERR_INVALID, "unsupported function directive '%s'", nm);
            goto fail;
        }
        if (is_id(cur(ps), ".reqnctapercluster") || is_id(cur(ps), ".explicitcluster")) {
            fail(ps, cur(ps)->line, PTX_ERR_INVALID, "clusters are not supported");
            goto fail;
        }
        int pragma = is_id(cur(ps), ".pragma");
        ps->i++;
        if (pragma) {
            skip_statement(ps);
            continue;
        }
        while (cur(ps)->kind == TK_NUM || is_p(cur(ps), ','))
            ps->i++;
    }
    int idx = find_func(m, name);
    if (idx < 0) {
        if (!GROW(m->funcs, m->nfuncs, m->cap_funcs)) {
            nomem(ps);
            goto fail;
        }
        idx = (int)m->nfuncs++;
        memset(&m->funcs[idx], 0, sizeof m->funcs[idx]);
        m->funcs[idx].name = strdup(name);
        if (!m->funcs[idx].name) {
            nomem(ps);
            goto fail;
        }
        if (add_sym(ps, 1, name, SYM_FUNC, (uint64_t)idx, 0))
            goto fail;
    }
    if (is_p(cur(ps), ';')) { /* a prototype */
        ps->i++;
        pfunc *f = &m->funcs[idx];
        if (!f->defined) {
            f->is_entry = entry;
            f->nparams = tmp.nparams;
            f->nrets = tmp.nrets;
            memcpy(f->params, tmp.params, sizeof tmp.params);
            memcpy(f->rets, tmp.rets, sizeof tmp.rets);
        }
        free(tmp.consts);
        free(tmp.specials);
        ps->f = NULL;
        (void)is_extern;
        return 0;
    }
    if (expect(ps, '{'))
        goto fail;
    if (m->funcs[idx].defined) {
        fail(ps, line, PTX_ERR_INVALID, "function '%s' defined twice", name);
        goto fail;
    }
    {
        char *keep = m->funcs[idx].name;
        m->funcs[idx] = tmp;
        m->funcs[idx].name = keep;
    }
    ps->f = &m->funcs[idx];
    ps->fidx = (uint32_t)idx;
    ps->f->defined = 1;
    if (parse_body(ps))
        return -1;
    pfunc *f = ps->f;
    /* A body that falls off its end returns. */
    pinsn ret;
    memset(&ret, 0, sizeof ret);
    ret.op = OP_RET;
    ret.guard = ret.d = ret.d2 = ret.a = ret.b = ret.c = ret.e = PTX_NONE;
    ret.line = cur(ps)->line;
    if (emit(ps, &ret))
        return -1;
    for (size_t k = 0; k < ps->nfix; k++) {
        sym *l = find_sym(ps->labels, ps->nlabels, ps->fix[k].label);
        if (!l)
            return fail(ps, ps->fix[k].line, PTX_ERR_INVALID, "undefined label '%s'", ps->fix[k].label);
        f->code[ps->fix[k].pc].target = (int32_t)l->value;
    }
    if (entry) {
        f->info.abi_version = AR_HOST_ABI_VERSION;
        f->info.num_params = f->nparams;
        for (uint32_t k = 0; k < f->nparams; k++)
            f->info.param_sizes[k] = f->params[k].size;
    }
    if (f->nslots > 65536)
        return fail(ps, line, PTX_ERR_INVALID, "function '%s' uses more than 65536 registers", name);
    ps->f = NULL;
    return 0;
fail:
    if (ps->f == &tmp) {
        free(tmp.code);
        free(tmp.consts);
        free(tmp.specials);
        free(tmp.calls);
        ps->f = NULL;
    }
    return -1;
}

static int parse_module(parser *ps)
{
    int have_version = 0, have_target = 0;
    while (cur(ps)->kind != TK_EOF) {
        tok *t = cur(ps);
        int line = t->line;
        if (is_id(t, ".version")) {
            ps->i++;
            char v[32];
            tokstr(cur(ps), v, sizeof v);
            int major = 0, minor = 0;
            if (cur(ps)->kind != TK_NUM || sscanf(v, "%d.%d", &major, &minor) != 2)
                return fail(ps, line, PTX_ERR_INVALID, "bad .version");
            if (major > PTX_MAX_MAJOR || (major == PTX_MAX_MAJOR && minor > PTX_MAX_MINOR))
                return fail(ps, line, PTX_ERR_VERSION, "PTX ISA %d.%d is newer than the %d.%d this executor knows",
                            major, minor, PTX_MAX_MAJOR, PTX_MAX_MINOR);
            ps->i++;
            have_version = 1;
        } else if (is_id(t, ".target")) {
            ps->i++;
            for (;;) {
                char v[32];
                tokstr(cur(ps), v, sizeof v);
                if (cur(ps)->kind != TK_ID)
                    return fail(ps, line, PTX_ERR_INVALID, "bad .target");
                ps->i++;
                if (!strncmp(v, "sm_", 3) || !strncmp(v, "compute_", 8)) {
                    int sm = atoi(strchr(v, '_') + 1);
                    if (sm > PTX_MAX_SM)
                        return fail(ps, line, PTX_ERR_VERSION, ".target %s is newer than sm_%d", v, PTX_MAX_SM);
                    ps->sm = sm;
                } else if (!strcmp(v, "map_f64_to_f32")) {
                    return fail(ps, line, PTX_ERR_INVALID, ".target map_f64_to_f32 is not supported");
                }
                if (!is_p(cur(ps), ','))
                    break;
                ps->i++;
            }
            have_target = 1;
        } else if (is_id(t, ".address_size")) {
            ps->i++;
            uint64_t v;
            if (parse_uint(cur(ps), &v) || v != 64)
                return fail(ps, line, PTX_ERR_INVALID, "only .address_size 64 is supported");
            ps->i++;
        } else if (is_id(t, ".file") || is_id(t, ".loc") || is_id(t, ".pragma")) {
            ps->i++;
            while (cur(ps)->kind != TK_EOF && !is_id(cur(ps), ".file") && !is_id(cur(ps), ".visible") &&
                   !is_id(cur(ps), ".entry") && !is_id(cur(ps), ".func") && !is_id(cur(ps), ".extern") &&
                   !is_id(cur(ps), ".global") && !is_id(cur(ps), ".const") && !is_id(cur(ps), ".shared") &&
                   !is_id(cur(ps), ".weak") && !is_id(cur(ps), ".section") && !is_p(cur(ps), ';'))
                ps->i++;
            if (is_p(cur(ps), ';'))
                ps->i++;
        } else if (is_id(t, ".section")) {
            /* debug sections: skip the braces */
            while (cur(ps)->kind != TK_EOF && !is_p(cur(ps), '{'))
                ps->i++;
            int depth = 0;
            do {
                if (is_p(cur(ps), '{'))
                    depth++;
                else if (is_p(cur(ps), '}'))
                    depth--;
                ps->i++;
            } while (depth > 0 && cur(ps)->kind != TK_EOF);
        } else if (is_id(t, ".visible") || is_id(t, ".extern") || is_id(t, ".weak") || is_id(t, ".common") ||
                   is_id(t, ".entry") || is_id(t, ".func") || is_id(t, ".global") || is_id(t, ".const") ||
                   is_id(t, ".shared")) {
            int is_extern = 0;
            while (is_id(cur(ps), ".visible") || is_id(cur(ps), ".extern") || is_id(cur(ps), ".weak") ||
                   is_id(cur(ps), ".common")) {
                is_extern |= is_id(cur(ps), ".extern");
                ps->i++;
            }
            if (!have_version || !have_target)
                return fail(ps, line, PTX_ERR_INVALID, "declarations before .version and .target");
            t = cur(ps);
            if (is_id(t, ".entry") || is_id(t, ".func")) {
                int entry = is_id(t, ".entry");
                ps->i++;
                if (parse_function(ps, entry, is_extern))
                    return -1;
            } else if (is_id(t, ".global") || is_id(t, ".const") || is_id(t, ".shared")) {
                int sp = is_id(t, ".global") ? S_GLOBAL : is_id(t, ".const") ? S_CONST : S_SHARED;
                ps->i++;
                if (parse_var(ps, sp, 1, is_extern))
                    return -1;
            } else {
                char nm[64];
                tokstr(t, nm, sizeof nm);
                return fail(ps, line, PTX_ERR_INVALID, "unsupported declaration '%s'", nm);
            }
        } else {
            char nm[64];
            tokstr(t, nm, sizeof nm);
            return fail(ps, line, PTX_ERR_INVALID, "unsupported module directive '%s'", nm);
        }
        if (ps->err)
            return -1;
    }
    if (!have_version)
        return fail(ps, 1, PTX_ERR_INVALID, "no .version directive");
    return 0;
}

/* ------------------------------------------------------------- whole module */

void ptx_program_free(pmodule *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        pfunc *f = &m->funcs[i];
        free(f->name);
        free(f->code);
        free(f->consts);
        free(f->specials);
        free(f->calls);
    }
    for (uint32_t i = 0; i < m->nvars; i++) {
        free(m->vars[i].name);
        free(m->vars[i].data);
    }
    free(m->funcs);
    free(m->vars);
    free(m);
}

static void module_destroy(void *ctx)
{
    ptx_kernel_ctx *kc = ctx; /* the module's context is an array of kernel contexts */
    if (!kc)
        return;
    ptx_program_free(kc[0].mod);
    free(kc);
}

int ptx_looks_like(const char *image)
{
    const char *p = image;
    for (size_t i = 0; i < 65536 && p[i]; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 9 || (c > 13 && c < 32 && c != 27) || c > 126)
            return 0;
        if (p[i] == '.' && !strncmp(p + i, ".version", 8))
            return 1;
    }
    return 0;
}

/* Stack every lane gets for .local: the deepest chain of depots. */
static uint32_t local_stack(pmodule *m, uint32_t fi, int depth)
{
    pfunc *f = &m->funcs[fi];
    uint32_t deepest = 0;
    if (depth > 16)
        return 1u << 16; /* recursion: a fixed stack, overflow checked at calls */
    for (int32_t pc = 0; pc < f->ncode; pc++) {
        if (f->code[pc].op != OP_CALL)
            continue;
        uint32_t s = local_stack(m, (uint32_t)f->code[pc].target, depth + 1);
        if (s > deepest)
            deepest = s;
    }
    uint64_t total = (uint64_t)align_up(f->local_bytes, 16) + deepest;
    return total > (1u << 20) ? 1u << 20 : (uint32_t)total;
}

ptx_status ptx_module_load(const char *text, arsim_module **out, char *log, size_t log_size)
{
    parser ps;
    memset(&ps, 0, sizeof ps);
    ps.log = log;
    ps.log_size = log_size;
    if (log && log_size)
        log[0] = 0;
    ps.m = calloc(1, sizeof *ps.m);
    if (!ps.m || lex(text, &ps.lx) != 0) {
        free(ps.m);
        free(ps.lx.t);
        return PTX_ERR_OUT_OF_MEMORY;
    }
    pmodule *m = ps.m;
    parse_module(&ps);
    if (ps.err == PTX_OK) {
        for (size_t k = 0; k < ps.ncallfix; k++) {
            int fi = find_func(m, ps.callfix[k].name);
            if (fi < 0 || !m->funcs[fi].defined) {
                fail(&ps, ps.callfix[k].line, PTX_ERR_INVALID,
                     fi < 0 ? "call of undeclared function '%s'" : "call of external function '%s' (not supported)",
                     ps.callfix[k].name);
                break;
            }
            pfunc *callee = &m->funcs[fi];
            pfunc *caller = &m->funcs[ps.callfix[k].func];
            pinsn *in = &caller->code[ps.callfix[k].pc];
            pcall *c = &caller->calls[in->aux];
            if (callee->is_entry || (uint32_t)c->nargs != callee->nparams || (uint32_t)c->nrets != callee->nrets) {
                fail(&ps, ps.callfix[k].line, PTX_ERR_INVALID, "call of '%s' with the wrong arguments", callee->name);
                break;
            }
            if (callee->uses_barrier) {
                fail(&ps, ps.callfix[k].line, PTX_ERR_INVALID,
                     "call of '%s', which uses bar.sync (barriers in .func are not supported)", callee->name);
                break;
            }
            in->target = fi;
        }
    }
    if (ps.err == PTX_OK) {
        m->shared_module = align_up(ps.shared_pool, 16);
        for (size_t k = 0; k < ps.ndyn; k++)
            m->funcs[ps.dyn[k].func].consts[ps.dyn[k].cidx].value += m->shared_module;
        uint32_t maxlocal = 0;
        for (uint32_t i = 0; i < m->nfuncs; i++) {
            m->funcs[i].shared_static = m->shared_module;
            if (m->funcs[i].is_entry && m->funcs[i].defined) {
                uint32_t s = local_stack(m, i, 0);
                if (s > maxlocal)
                    maxlocal = s;
            }
        }
        m->max_local = maxlocal;
    }
    free(ps.lx.t);
    free(ps.msyms);
    free(ps.regs);
    free(ps.fsyms);
    free(ps.labels);
    free(ps.fix);
    free(ps.callfix);
    free(ps.dyn);
    if (ps.err != PTX_OK) {
        ptx_program_free(m);
        return ps.err;
    }
    /* One engine module; its kernels are the .entry functions. */
    ptx_kernel_ctx *kc = calloc(m->nfuncs ? m->nfuncs : 1, sizeof *kc);
    if (!kc) {
        ptx_program_free(m);
        return PTX_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        kc[i].mod = m;
        kc[i].func = i;
    }
    kc[0].mod = m;
    arsim_module *am;
    if (arsim_module_create_foreign(kc, module_destroy, &am) != ARSIM_OK) {
        ptx_program_free(m);
        free(kc);
        return PTX_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        pfunc *f = &m->funcs[i];
        if (!f->is_entry || !f->defined)
            continue;
        if (arsim_module_add_foreign_kernel(am, f->name, &f->info, ptx_run, &kc[i]) != ARSIM_OK) {
            if (log && log_size)
                snprintf(log, log_size, "ptx: kernel '%s' is defined twice or has too many parameters", f->name);
            arsim_module_unload(am);
            return PTX_ERR_INVALID;
        }
    }
    *out = am;
    return PTX_OK;
}
