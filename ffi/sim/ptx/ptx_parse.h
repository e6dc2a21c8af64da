/* The PTX parser's shared state: tokens, the parser, operands.
 *
 * The parser is split by job: ptx_lex.c (tokens and error messages),
 * ptx_operand.c (register slots, symbols, operands), ptx_insn.c (one
 * handler per instruction family, dispatched from ptx_opcodes.def) and
 * ptx_parse.c (declarations, functions, the module).
 */
#ifndef CUSIM_PTX_PARSE_H
#define CUSIM_PTX_PARSE_H

#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* ------------------------------------------------------------- tokens */

enum { TK_EOF = 0, TK_ID, TK_NUM, TK_STR, TK_PUNCT };

/* The longest name (identifier, label, symbol) the parser stores; a longer
 * token is refused by the lexer, never cut.  numba's mangled names run to
 * about 230 characters. */
#define PTX_NAME_MAX 1024

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


typedef struct regdecl {
    char name[PTX_NAME_MAX];
    int count; /* %r<N>: N names %r0..%r(N-1); 0: exactly name */
    uint32_t base;
    int type;
} regdecl;

enum { SYM_KPARAM = 1, SYM_FPARAM, SYM_SHARED, SYM_DYNSHARED, SYM_LOCAL, SYM_VAR, SYM_FUNC };

typedef struct sym {
    char name[PTX_NAME_MAX];
    int kind;
    uint64_t value; /* offset or address or function index */
    uint32_t size;
} sym;

typedef struct fixup {
    int32_t pc;
    char label[PTX_NAME_MAX];
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
    struct callfix_entry { uint32_t func; int32_t pc; char name[PTX_NAME_MAX]; int line; } *callfix;
    size_t ncallfix, cap_callfix;
    dynfix *dyn;
    size_t ndyn, cap_dyn;
    uint32_t shared_pool;
} parser;

#define GROW(arr, n, cap)                                                                         \
    ((n) < (cap) ? 1                                                                              \
                 : ((cap) = (cap) ? (cap) * 2 : 16,                                               \
                    (arr) = realloc((arr), (cap) * sizeof *(arr)), (arr) != NULL))

/* ------------------------------------------------------------- operands */

/* The most elements a braced vector holds (wgmma's accumulators: 128),
 * and the longest name of one (a longer one is refused, never cut); ld, st
 * and mov take at most 4 elements. */
#define PTX_VEC_MAX 128
#define PTX_VEC_NAME 64

enum { O_NAME = 1, O_INT, O_F32, O_F64, O_ADDR, O_VEC, O_SINK, O_LIST };

typedef struct opnd {
    int kind;
    int neg;        /* !%p */
    char name[PTX_NAME_MAX]; /* O_NAME; O_ADDR base name ("" if none) */
    uint64_t bits;  /* O_INT value, O_F32/O_F64 bits, O_ADDR offset */
    char vnames[PTX_VEC_MAX][PTX_VEC_NAME]; /* O_VEC / O_LIST elements; "_" = sink */
    int nv;
    char pair[PTX_NAME_MAX];  /* p|q: q */
} opnd;

/* ------------------------------------------------------------- token access */

static inline tok *cur(parser *ps) { return &ps->lx.t[ps->i]; }
static inline tok *peekn(parser *ps, size_t k)
{
    size_t j = ps->i + k;
    return j <= ps->lx.n ? &ps->lx.t[j] : &ps->lx.t[ps->lx.n];
}
static inline int is_p(tok *t, char c) { return t->kind == TK_PUNCT && t->s[0] == c; }
static inline int is_id(tok *t, const char *s)
{
    return t->kind == TK_ID && (int)strlen(s) == t->len && memcmp(t->s, s, (size_t)t->len) == 0;
}
static inline void tokstr(tok *t, char *buf, size_t n)
{
    size_t len = (size_t)t->len < n - 1 ? (size_t)t->len : n - 1;
    memcpy(buf, t->s, len);
    buf[len] = 0;
}

/* ptx_lex.c */
PTX_HIDDEN int ptx_lex(const char *src, lexer *lx, int *long_line);
/* Records the first error (later ones are dropped) as "ptx line N: ..."; returns -1. */
PTX_HIDDEN int ptx_fail(parser *ps, int line, ptx_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
PTX_HIDDEN int ptx_nomem(parser *ps);
PTX_HIDDEN int ptx_expect(parser *ps, char c);
/* Consumes a line directive (.loc, .file: no ';', it ends with its line) exactly. */
PTX_HIDDEN int ptx_line_directive(parser *ps);
/* Consumes `.pragma "..." [, "..."]* ;` exactly. */
PTX_HIDDEN int ptx_pragma(parser *ps);
PTX_HIDDEN int ptx_parse_uint(tok *t, uint64_t *out);

/* ptx_operand.c */
PTX_HIDDEN int ptx_type_named(const char *s);
PTX_HIDDEN int ptx_is_float_type(int t);
PTX_HIDDEN uint32_t ptx_new_slots(parser *ps, uint32_t n);
PTX_HIDDEN uint32_t ptx_const_slot(parser *ps, uint64_t v);
PTX_HIDDEN sym *ptx_find_sym(sym *tab, size_t n, const char *name);
PTX_HIDDEN sym *ptx_lookup(parser *ps, const char *name);
PTX_HIDDEN int ptx_add_sym(parser *ps, int module, const char *name, int kind, uint64_t value,
                           uint32_t size);
PTX_HIDDEN int ptx_reg_lookup(parser *ps, const char *name, uint32_t *slot);
PTX_HIDDEN int ptx_parse_number(parser *ps, int negate, opnd *o);
PTX_HIDDEN uint64_t ptx_imm_value(const opnd *o, int type);
PTX_HIDDEN int ptx_parse_operand(parser *ps, opnd *o);
PTX_HIDDEN int ptx_src_slot(parser *ps, const opnd *o, int type, int line, uint32_t *slot);
PTX_HIDDEN int ptx_dst_slot(parser *ps, const opnd *o, int line, uint32_t *slot);
PTX_HIDDEN int ptx_vec_slots(parser *ps, const opnd *o, int type, int line, int dst,
                             uint32_t *slots);
PTX_HIDDEN int ptx_addr_operand(parser *ps, const opnd *o, int line, pinsn *in);

/* ptx_insn.c */
PTX_HIDDEN int ptx_parse_instruction(parser *ps, uint32_t guard, int guard_neg);

/* Appends an instruction to the function being parsed. */
static inline int ptx_emit(parser *ps, const pinsn *in)
{
    pfunc *f = ps->f;
    if (!GROW(f->code, f->ncode, f->cap_code))
        return ptx_nomem(ps);
    f->code[f->ncode++] = *in;
    return 0;
}

#endif /* CUSIM_PTX_PARSE_H */
