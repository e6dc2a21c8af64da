/* PTX text -> decoded program (ptx_internal.h): the statements.
 *
 * The statement parser for the PTX that nvcc and NVRTC write: module
 * directives, .entry/.func headers and bodies, register and variable
 * declarations and labels; instructions go to ptx_insn.c.  Everything is
 * resolved here, once: labels to instruction indices, calls to functions,
 * symbols to addresses.  Whatever is not understood stops the load with a
 * message naming the line and the construct; nothing is skipped silently.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_parse.h"

/* The newest PTX ISA and target the executor knows. */
#define PTX_MAX_MAJOR 9
#define PTX_MAX_MINOR 5
#define PTX_MAX_SM 90

/* ------------------------------------------------------------- declarations */

typedef struct decl {
    uint32_t align;
    int type;
    int vecn;
} decl;

/* [.align N] [.v2|.v4] .type, after the state space. */
/* After a kernel parameter's type: `.ptr [.global|.shared|.const|.local] [.align N]`
 * (nvcc writes them; they only describe the pointee). */
static int parse_ptr_attrs(parser *ps)
{
    if (!is_id(cur(ps), ".ptr"))
        return 0;
    ps->i++;
    if (is_id(cur(ps), ".global") || is_id(cur(ps), ".shared") || is_id(cur(ps), ".const") ||
        is_id(cur(ps), ".local"))
        ps->i++;
    if (is_id(cur(ps), ".align")) {
        ps->i++;
        uint64_t a;
        if (ptx_parse_uint(cur(ps), &a) || a == 0 || (a & (a - 1)))
            return ptx_fail(ps, cur(ps)->line, PTX_ERR_INVALID, "bad .align");
        ps->i++;
    }
    return 0;
}

static int parse_decl_head(parser *ps, decl *d)
{
    memset(d, 0, sizeof *d);
    d->vecn = 1;
    for (;;) {
        tok *t = cur(ps);
        if (is_id(t, ".align")) {
            ps->i++;
            uint64_t a;
            if (ptx_parse_uint(cur(ps), &a) || a == 0 || (a & (a - 1)))
                return ptx_fail(ps, t->line, PTX_ERR_INVALID, "bad .align");
            d->align = (uint32_t)a;
            ps->i++;
        } else if (is_id(t, ".v2") || is_id(t, ".v4")) {
            d->vecn = t->s[2] - '0';
            ps->i++;
        } else if (is_id(t, ".ptr") || is_id(t, ".global") || is_id(t, ".shared") ||
                   is_id(t, ".const") || is_id(t, ".local")) {
            ps->i++; /* kernel parameter attributes (.ptr .global .align N) */
        } else if (t->kind == TK_ID && t->s[0] == '.' && t->len > 1) {
            char nm[PTX_NAME_MAX];
            tokstr(t, nm, sizeof nm);
            int ty = ptx_type_named(nm + 1);
            if (!ty)
                return ptx_fail(ps, t->line, PTX_ERR_INVALID, "unsupported declaration qualifier '%s'", nm);
            d->type = ty;
            ps->i++;
            return parse_ptr_attrs(ps);
        } else {
            return ptx_fail(ps, t->line, PTX_ERR_INVALID, "expected a type in a declaration");
        }
    }
}

/* name, name<N> or name[N] / name[]; returns the element count (-1 for []). */
static int parse_decl_name(parser *ps, char *name, size_t n, long *count, int *angle)
{
    tok *t = cur(ps);
    if (t->kind != TK_ID)
        return ptx_fail(ps, t->line, PTX_ERR_INVALID, "expected a name in a declaration");
    tokstr(t, name, n);
    ps->i++;
    *count = 1;
    *angle = 0;
    if (is_p(cur(ps), '<')) {
        ps->i++;
        uint64_t v;
        if (ptx_parse_uint(cur(ps), &v))
            return ptx_fail(ps, t->line, PTX_ERR_INVALID, "bad register count");
        ps->i++;
        if (ptx_expect(ps, '>'))
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
                if (ptx_parse_uint(cur(ps), &v))
                    return ptx_fail(ps, t->line, PTX_ERR_INVALID, "bad array size");
                ps->i++;
                total = total < 0 ? -1 : total * (long)v;
            }
            if (ptx_expect(ps, ']'))
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
            ptx_parse_number(ps, 1, &o);
        } else if (t->kind == TK_NUM) {
            ptx_parse_number(ps, 0, &o);
        } else {
            return ptx_fail(ps, t->line, PTX_ERR_INVALID, "unsupported initializer (only numbers)");
        }
        uint64_t v = ptx_imm_value(&o, type);
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
        char name[PTX_NAME_MAX];
        long count;
        int angle;
        if (parse_decl_name(ps, name, sizeof name, &count, &angle))
            return -1;
        uint32_t esize = (uint32_t)ptx_type_size(d.type) * (uint32_t)d.vecn;
        uint32_t align = d.align ? d.align : esize;
        if (space == S_SHARED) {
            if (count < 0 || is_extern) {
                if (ptx_add_sym(ps, module_scope, name, SYM_DYNSHARED, 0, 0))
                    return -1;
                ps->m->has_dynamic_shared = 1;
            } else {
                if (align > ps->m->shared_align)
                    ps->m->shared_align = align;
                ps->shared_pool = align_up(ps->shared_pool, align);
                if (ptx_add_sym(ps, module_scope, name, SYM_SHARED, ps->shared_pool, (uint32_t)count * esize))
                    return -1;
                ps->shared_pool += (uint32_t)count * esize;
            }
        } else if (space == S_LOCAL) {
            if (module_scope || count < 0)
                return ptx_fail(ps, line, PTX_ERR_INVALID, "unsupported .local declaration of '%s'", name);
            if (align > ps->m->local_align)
                ps->m->local_align = align;
            uint32_t off = align_up(ps->f->local_bytes, align < 16 ? 16 : align);
            if (ptx_add_sym(ps, 0, name, SYM_LOCAL, off, (uint32_t)count * esize))
                return -1;
            ps->f->local_bytes = off + (uint32_t)count * esize;
        } else { /* .global, .const: module memory */
            if (is_extern)
                return ptx_fail(ps, line, PTX_ERR_INVALID, "external variable '%s' is not supported", name);
            pmodule *m = ps->m;
            if (!GROW(m->vars, m->nvars, m->cap_vars))
                return ptx_nomem(ps);
            long nelem = count;
            size_t save = ps->i;
            if (is_p(cur(ps), '=')) {
                ps->i++;
                save = ps->i;
                if (parse_init(ps, d.type, NULL, 0, &nelem))
                    return -1;
                if (count >= 0 && nelem > count * d.vecn)
                    return ptx_fail(ps, line, PTX_ERR_INVALID, "too many initializers for '%s'", name);
                if (count >= 0)
                    nelem = count;
            }
            if (nelem <= 0)
                return ptx_fail(ps, line, PTX_ERR_INVALID, "variable '%s' has no size", name);
            size_t size = (size_t)nelem * esize;
            void *data = NULL;
            if (posix_memalign(&data, align > 64 ? align : 64, size ? size : 1))
                return ptx_nomem(ps);
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
            v->is_const = space == S_CONST;
            if (!v->name || ptx_add_sym(ps, 1, name, SYM_VAR, (uint64_t)(uintptr_t)data, (uint32_t)size))
                return ptx_nomem(ps);
        }
        if (!is_p(cur(ps), ','))
            break;
        ps->i++;
    }
    return ptx_expect(ps, ';');
}

static int parse_reg_decl(parser *ps)
{
    int line = cur(ps)->line;
    decl d;
    if (parse_decl_head(ps, &d))
        return -1;
    if (d.vecn != 1)
        return ptx_fail(ps, line, PTX_ERR_INVALID, "vector registers are not supported");
    for (;;) {
        char name[PTX_NAME_MAX];
        long count;
        int angle;
        if (parse_decl_name(ps, name, sizeof name, &count, &angle))
            return -1;
        if (!angle && count != 1)
            return ptx_fail(ps, line, PTX_ERR_INVALID, "register arrays are not supported");
        if (!GROW(ps->regs, ps->nregs, ps->cap_regs))
            return ptx_nomem(ps);
        regdecl *r = &ps->regs[ps->nregs++];
        snprintf(r->name, sizeof r->name, "%s", name);
        r->count = angle ? (int)count : 0;
        r->type = d.type;
        r->base = ptx_new_slots(ps, angle ? (uint32_t)count : 1);
        if (!is_p(cur(ps), ','))
            break;
        ps->i++;
    }
    return ptx_expect(ps, ';');
}

/* One sized `.type name[N]` parameter, laid out at the aligned end of *bytes
 * and named as a symbol of `kind`; its offset and size go to *off and *size. */
static int parse_one_param(parser *ps, int line, int kind, uint32_t *bytes, uint32_t *off,
                           uint32_t *size)
{
    decl d;
    if (parse_decl_head(ps, &d))
        return -1;
    char name[PTX_NAME_MAX];
    long count;
    int angle;
    if (parse_decl_name(ps, name, sizeof name, &count, &angle))
        return -1;
    if (count < 0)
        return ptx_fail(ps, line, PTX_ERR_INVALID, "unsized parameter '%s'", name);
    uint32_t esize = (uint32_t)ptx_type_size(d.type) * (uint32_t)d.vecn;
    uint32_t align = d.align ? d.align : esize;
    *size = (uint32_t)count * esize;
    *off = align_up(*bytes, align);
    *bytes = *off + *size;
    return ptx_add_sym(ps, 0, name, kind, *off, *size);
}

/* A .param in a body: a call argument or return slot in the per-lane frame. */
static int parse_frame_param(parser *ps)
{
    uint32_t off, size;
    if (parse_one_param(ps, cur(ps)->line, SYM_FPARAM, &ps->f->frame_bytes, &off, &size))
        return -1;
    return ptx_expect(ps, ';');
}

/* ( .param .type name, ... ) of an .entry or .func. */
static int parse_param_list(parser *ps, int entry, pparam *out, uint32_t *nout, uint32_t max)
{
    if (ptx_expect(ps, '('))
        return -1;
    while (!is_p(cur(ps), ')')) {
        int line = cur(ps)->line;
        if (!is_id(cur(ps), ".param"))
            return ptx_fail(ps, line, PTX_ERR_INVALID, "expected .param (register parameters are not supported)");
        ps->i++;
        if (*nout >= max)
            return ptx_fail(ps, line, PTX_ERR_INVALID, "more than %u parameters", max);
        uint32_t *bytes = entry ? &ps->f->param_bytes : &ps->f->frame_bytes;
        pparam *p = &out[*nout];
        if (parse_one_param(ps, line, entry ? SYM_KPARAM : SYM_FPARAM, bytes, &p->offset, &p->size))
            return -1;
        (*nout)++;
        if (is_p(cur(ps), ','))
            ps->i++;
        else if (!is_p(cur(ps), ')'))
            return ptx_fail(ps, line, PTX_ERR_INVALID, "expected ',' or ')' in a parameter list");
    }
    ps->i++;
    return 0;
}

#define PTX_MAX_NESTING 64

/* `label: .callprototype [(ret)] _ (params);` names the signature of an
 * indirect call; the call site's own lists say the same, so it is read (its
 * parentheses balanced, up to its ';') and needs nothing kept. */
static int parse_callprototype(parser *ps)
{
    int line = cur(ps)->line, depth = 0;
    for (ps->i++; depth > 0 || !is_p(cur(ps), ';'); ps->i++) {
        tok *t = cur(ps);
        if (t->kind == TK_EOF || is_p(t, '{') || is_p(t, '}') || (depth == 0 && is_p(t, ')')))
            return ptx_fail(ps, line, PTX_ERR_INVALID, "bad .callprototype");
        depth += is_p(t, '(') - is_p(t, ')');
    }
    ps->i++;
    return 0;
}

static int parse_body(parser *ps)
{
    /* A block's .reg and .param declarations end with it (a nested block may
     * redeclare an outer name): the counts at each '{' are restored at '}'. */
    size_t regs_at[PTX_MAX_NESTING], syms_at[PTX_MAX_NESTING];
    int depth = 1;
    while (depth > 0) {
        tok *t = cur(ps);
        if (t->kind == TK_EOF)
            return ptx_fail(ps, t->line, PTX_ERR_INVALID, "unterminated function body");
        if (is_p(t, '{')) {
            if (depth == PTX_MAX_NESTING)
                return ptx_fail(ps, t->line, PTX_ERR_INVALID, "blocks nested deeper than %d",
                                PTX_MAX_NESTING);
            regs_at[depth] = ps->nregs;
            syms_at[depth] = ps->nfsyms;
            depth++;
            ps->i++;
        } else if (is_p(t, '}')) {
            depth--;
            if (depth > 0) {
                ps->nregs = regs_at[depth];
                ps->nfsyms = syms_at[depth];
            }
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
        } else if (is_id(t, ".pragma")) {
            if (ptx_pragma(ps))
                return -1;
        } else if (is_id(t, ".loc") || is_id(t, ".file")) {
            if (ptx_line_directive(ps))
                return -1;
        } else if (is_id(t, ".callprototype")) {
            if (parse_callprototype(ps))
                return -1;
        } else if (t->kind == TK_ID && t->s[0] == '.') {
            char nm[PTX_NAME_MAX];
            tokstr(t, nm, sizeof nm);
            return ptx_fail(ps, t->line, PTX_ERR_INVALID, "unsupported directive '%s' in a function body", nm);
        } else if (t->kind == TK_ID && is_p(peekn(ps, 1), ':')) {
            char nm[PTX_NAME_MAX];
            tokstr(t, nm, sizeof nm);
            if (!GROW(ps->labels, ps->nlabels, ps->cap_labels))
                return ptx_nomem(ps);
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
            char nm[PTX_NAME_MAX];
            tokstr(cur(ps), nm, sizeof nm);
            uint32_t g;
            if (cur(ps)->kind != TK_ID || !ptx_reg_lookup(ps, nm, &g))
                return ptx_fail(ps, t->line, PTX_ERR_INVALID, "bad guard predicate '%s'", nm);
            ps->i++;
            if (cur(ps)->kind != TK_ID)
                return ptx_fail(ps, t->line, PTX_ERR_INVALID, "expected an instruction after a guard");
            if (ptx_parse_instruction(ps, g, neg))
                return -1;
        } else if (t->kind == TK_ID) {
            if (ptx_parse_instruction(ps, PTX_NONE, 0))
                return -1;
        } else {
            char nm[PTX_NAME_MAX];
            tokstr(t, nm, sizeof nm);
            return ptx_fail(ps, t->line, PTX_ERR_INVALID, "unexpected '%s'", nm);
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

/* The numbers after a performance directive; for .maxntid and .reqntid (dims
 * not NULL) up to three dimensions, the missing ones 1. */
static int parse_launch_bound(parser *ps, uint32_t *dims)
{
    int n = 0;
    while (cur(ps)->kind == TK_NUM || is_p(cur(ps), ',')) {
        if (cur(ps)->kind == TK_NUM && dims) {
            uint64_t v;
            if (n == 3 || ptx_parse_uint(cur(ps), &v) || v == 0 || v > 1024)
                return ptx_fail(ps, cur(ps)->line, PTX_ERR_INVALID, "bad .maxntid or .reqntid");
            dims[n++] = (uint32_t)v;
        }
        ps->i++;
    }
    for (; dims && n > 0 && n < 3; n++)
        dims[n] = 1;
    return 0;
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
        ptx_fail(ps, line, PTX_ERR_INVALID, "expected a function name");
        goto fail;
    }
    char name[PTX_NAME_MAX];
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
            char nm[PTX_NAME_MAX];
            tokstr(cur(ps), nm, sizeof nm);
            ptx_fail(ps, cur(ps)->line, PTX_ERR_INVALID, "unsupported function directive '%s'", nm);
            goto fail;
        }
        if (is_id(cur(ps), ".reqnctapercluster") || is_id(cur(ps), ".explicitcluster")) {
            ptx_fail(ps, cur(ps)->line, PTX_ERR_INVALID, "clusters are not supported");
            goto fail;
        }
        if (is_id(cur(ps), ".pragma")) {
            if (ptx_pragma(ps))
                goto fail;
            continue;
        }
        uint32_t *dims = is_id(cur(ps), ".maxntid") ? tmp.maxntid
                         : is_id(cur(ps), ".reqntid") ? tmp.reqntid : NULL;
        ps->i++;
        if (parse_launch_bound(ps, dims))
            goto fail;
    }
    int idx = find_func(m, name);
    if (idx < 0) {
        if (!GROW(m->funcs, m->nfuncs, m->cap_funcs)) {
            ptx_nomem(ps);
            goto fail;
        }
        idx = (int)m->nfuncs++;
        memset(&m->funcs[idx], 0, sizeof m->funcs[idx]);
        m->funcs[idx].name = strdup(name);
        if (!m->funcs[idx].name) {
            ptx_nomem(ps);
            goto fail;
        }
        if (ptx_add_sym(ps, 1, name, SYM_FUNC, (uint64_t)idx, 0))
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
    if (ptx_expect(ps, '{'))
        goto fail;
    if (m->funcs[idx].defined) {
        ptx_fail(ps, line, PTX_ERR_INVALID, "function '%s' defined twice", name);
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
    ret.guard = ret.d = ret.d2 = ret.a = ret.b = ret.c = ret.e = ret.f = PTX_NONE;
    ret.line = cur(ps)->line;
    if (ptx_emit(ps, &ret))
        return -1;
    for (size_t k = 0; k < ps->nfix; k++) {
        sym *l = ptx_find_sym(ps->labels, ps->nlabels, ps->fix[k].label);
        if (!l)
            return ptx_fail(ps, ps->fix[k].line, PTX_ERR_INVALID, "undefined label '%s'", ps->fix[k].label);
        f->code[ps->fix[k].pc].target = (int32_t)l->value;
    }
    if (entry) {
        f->info.abi_version = AR_HOST_ABI_VERSION;
        f->info.num_params = f->nparams;
        for (uint32_t k = 0; k < f->nparams; k++)
            f->info.param_sizes[k] = f->params[k].size;
    }
    if (f->nslots > 65536)
        return ptx_fail(ps, line, PTX_ERR_INVALID, "function '%s' uses more than 65536 registers", name);
    ps->f = NULL;
    return 0;
fail:
    if (ps->f == &tmp) {
        free(tmp.code);
        free(tmp.consts);
        free(tmp.specials);
        free(tmp.calls);
        free(tmp.lists);
        ps->f = NULL;
    }
    return -1;
}

/* `.section .debug_NAME { ... }` (nvcc -G, -lineinfo): the DWARF data is
 * ignored, but only debug sections are, and only a balanced brace block. */
static int parse_debug_section(parser *ps)
{
    int line = cur(ps)->line;
    ps->i++;
    tok *n = cur(ps);
    if (n->kind != TK_ID || n->len < 7 || memcmp(n->s, ".debug_", 7) != 0) {
        char nm[PTX_NAME_MAX];
        tokstr(n, nm, sizeof nm);
        return ptx_fail(ps, line, PTX_ERR_INVALID, "unsupported section '%s'", nm);
    }
    ps->i++;
    if (ptx_expect(ps, '{'))
        return -1;
    for (int depth = 1; depth > 0; ps->i++) {
        if (cur(ps)->kind == TK_EOF)
            return ptx_fail(ps, line, PTX_ERR_INVALID, "unterminated .section");
        depth += is_p(cur(ps), '{') - is_p(cur(ps), '}');
    }
    return 0;
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
                return ptx_fail(ps, line, PTX_ERR_INVALID, "bad .version");
            if (major > PTX_MAX_MAJOR || (major == PTX_MAX_MAJOR && minor > PTX_MAX_MINOR))
                return ptx_fail(ps, line, PTX_ERR_VERSION, "PTX ISA %d.%d is newer than the %d.%d this executor knows",
                            major, minor, PTX_MAX_MAJOR, PTX_MAX_MINOR);
            ps->i++;
            have_version = 1;
        } else if (is_id(t, ".target")) {
            ps->i++;
            for (;;) {
                char v[32];
                tokstr(cur(ps), v, sizeof v);
                if (cur(ps)->kind != TK_ID)
                    return ptx_fail(ps, line, PTX_ERR_INVALID, "bad .target");
                ps->i++;
                if (!strncmp(v, "sm_", 3) || !strncmp(v, "compute_", 8)) {
                    int sm = atoi(strchr(v, '_') + 1);
                    if (sm > PTX_MAX_SM)
                        return ptx_fail(ps, line, PTX_ERR_VERSION, ".target %s is newer than sm_%d", v, PTX_MAX_SM);
                    ps->sm = sm;
                } else if (!strcmp(v, "map_f64_to_f32")) {
                    return ptx_fail(ps, line, PTX_ERR_INVALID, ".target map_f64_to_f32 is not supported");
                }
                if (!is_p(cur(ps), ','))
                    break;
                ps->i++;
            }
            have_target = 1;
        } else if (is_id(t, ".address_size")) {
            ps->i++;
            uint64_t v;
            if (ptx_parse_uint(cur(ps), &v) || v != 64)
                return ptx_fail(ps, line, PTX_ERR_INVALID, "only .address_size 64 is supported");
            ps->i++;
        } else if (is_id(t, ".file") || is_id(t, ".loc")) {
            if (ptx_line_directive(ps))
                return -1;
        } else if (is_id(t, ".pragma")) {
            if (ptx_pragma(ps))
                return -1;
        } else if (is_id(t, ".section")) {
            if (parse_debug_section(ps))
                return -1;
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
                return ptx_fail(ps, line, PTX_ERR_INVALID, "declarations before .version and .target");
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
                char nm[PTX_NAME_MAX];
                tokstr(t, nm, sizeof nm);
                return ptx_fail(ps, line, PTX_ERR_INVALID, "unsupported declaration '%s'", nm);
            }
        } else {
            char nm[PTX_NAME_MAX];
            tokstr(t, nm, sizeof nm);
            return ptx_fail(ps, line, PTX_ERR_INVALID, "unsupported module directive '%s'", nm);
        }
        if (ps->err)
            return -1;
    }
    if (!have_version)
        return ptx_fail(ps, 1, PTX_ERR_INVALID, "no .version directive");
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
        free(f->lists);
    }
    for (uint32_t i = 0; i < m->nvars; i++) {
        free(m->vars[i].name);
        if (m->vars[i].registered)
            arsim_mem_unregister(m->vars[i].data);
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
        /* An indirect call may reach any function whose address is taken. */
        for (uint32_t c = 0; c < m->nfuncs; c++) {
            int direct = f->code[pc].op == OP_CALL && (uint32_t)f->code[pc].target == c;
            int indirect = f->code[pc].op == OP_CALLI && m->funcs[c].address_taken &&
                           m->funcs[c].defined && !m->funcs[c].is_entry;
            uint32_t s = direct || indirect ? local_stack(m, c, depth + 1) : 0;
            if (s > deepest)
                deepest = s;
        }
    }
    uint64_t total = (uint64_t)align_up(f->local_bytes, m->local_align) + deepest;
    return total > (1u << 20) ? 1u << 20 : (uint32_t)total;
}

/* A call of one of the device system calls the executor provides
 * (ptx_exec_printf.c) that no function of the module defines, declared as
 * CUDA declares it: its operation, or OP_CALL.
 *   .extern .func (.param .b32 r) vprintf (.param .b64 fmt, .param .b64 args)
 *   .extern .func __assertfail (.param .b64 message, .param .b64 file,
 *       .param .b32 line, .param .b64 function, .param .b64 char_size) */
static int builtin_call(const pmodule *m, int fi, const struct callfix_entry *fix)
{
    if (fi < 0 || m->funcs[fi].defined)
        return OP_CALL;
    const pfunc *f = &m->funcs[fi];
    const pcall *c = &m->funcs[fix->func].calls[m->funcs[fix->func].code[fix->pc].aux];
    if (!strcmp(fix->name, "vprintf") && f->nparams == 2 && f->params[0].size == 8 &&
        f->params[1].size == 8 && f->nrets == 1 && f->rets[0].size == 4 && c->nargs == 2 &&
        c->nrets <= 1)
        return OP_VPRINTF;
    static const uint32_t assert_sizes[5] = {8, 8, 4, 8, 8};
    int is_assert = !strcmp(fix->name, "__assertfail") && f->nparams == 5 && f->nrets == 0 &&
                    c->nargs == 5 && c->nrets == 0;
    for (int k = 0; is_assert && k < 5; k++)
        is_assert = f->params[k].size == assert_sizes[k];
    return is_assert ? OP_ASSERTFAIL : OP_CALL;
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
    if (ps.m)
        ps.m->local_align = ps.m->shared_align = 16;
    int long_line = 0;
    if (!ps.m || ptx_lex(text, &ps.lx, &long_line) != 0) {
        free(ps.m);
        free(ps.lx.t);
        return PTX_ERR_OUT_OF_MEMORY;
    }
    pmodule *m = ps.m;
    if (long_line)
        ptx_fail(&ps, long_line, PTX_ERR_INVALID, "a name of %d characters or more", PTX_NAME_MAX);
    else
        parse_module(&ps);
    if (ps.err == PTX_OK) {
        for (size_t k = 0; k < ps.ncallfix; k++) {
            int fi = find_func(m, ps.callfix[k].name);
            int op = builtin_call(m, fi, &ps.callfix[k]);
            if (op != OP_CALL) {
                m->funcs[ps.callfix[k].func].code[ps.callfix[k].pc].op = (uint8_t)op;
                continue;
            }
            if (fi < 0 || !m->funcs[fi].defined) {
                ptx_fail(&ps, ps.callfix[k].line, PTX_ERR_INVALID,
                     fi < 0 ? "call of undeclared function '%s'" : "call of external function '%s' (not supported)",
                     ps.callfix[k].name);
                break;
            }
            pfunc *callee = &m->funcs[fi];
            pfunc *caller = &m->funcs[ps.callfix[k].func];
            pinsn *in = &caller->code[ps.callfix[k].pc];
            pcall *c = &caller->calls[in->aux];
            /* A call may expect returns its callee's definition does not
             * make: numba declares a C-ABI function that returns nothing as
             * returning a value it then ignores, and its definition comes
             * from another linked input.  Those returns read as zero. */
            if (callee->is_entry || (uint32_t)c->nargs != callee->nparams ||
                ((uint32_t)c->nrets != callee->nrets && callee->nrets != 0)) {
                ptx_fail(&ps, ps.callfix[k].line, PTX_ERR_INVALID, "call of '%s' with the wrong arguments", callee->name);
                break;
            }
            if (callee->uses_barrier) {
                ptx_fail(&ps, ps.callfix[k].line, PTX_ERR_INVALID,
                     "call of '%s', which uses bar.sync (barriers in .func are not supported)", callee->name);
                break;
            }
            in->target = fi;
        }
    }
    if (ps.err == PTX_OK) {
        ptx_mark_printf(m);
        m->shared_module = align_up(ps.shared_pool, 16);
        m->shared_declared = ps.shared_pool;
        for (size_t k = 0; k < ps.ndyn; k++)
            m->funcs[ps.dyn[k].func].consts[ps.dyn[k].cidx].value += m->shared_module;
        uint32_t maxlocal = 0;
        for (uint32_t i = 0; i < m->nfuncs; i++) {
            m->funcs[i].shared_static = m->shared_module;
            if (m->funcs[i].is_entry && m->funcs[i].defined) {
                uint32_t s = local_stack(m, i, 0);
                m->funcs[i].local_total = s;
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
    if (ptx_register_vars(m)) {
        ptx_program_free(m);
        return PTX_ERR_OUT_OF_MEMORY;
    }
    /* One engine module; its kernels are the .entry functions. */
    ptx_kernel_ctx *kc = calloc(m->nfuncs ? m->nfuncs : 1, sizeof *kc);
    if (!kc) {
        ptx_program_free(m);
        return PTX_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        kc[i].magic = PTX_CTX_MAGIC;
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

